import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * template — the .lua files as templates, and the one way to fill them (render). A file is a header (its
 * documentation, never pasted) and sections, each started by a line `--@@ name`. In a section:
 *   - `$NAME` is a placeholder: the value of NAME (a literal, a variable's name, an expression or lines of code);
 *   - a line `@name(ARG = text, …)` (or `@file.name(…)`, or `@name` without arguments) pastes another section,
 *     rendered with the same values plus its arguments, indented as the line. An argument's text, as written (with
 *     the calling section's own arguments in it), is pasted in parentheses unless it is a name, a placeholder or a
 *     number, so that `TEST = x > $AFTER` stays one operand where the section uses $TEST.
 * A value alone on its line may be a list of lines: each is indented as the line, and an empty list drops the line.
 */

/**
 * LUA_DIR — where the .lua files are at run time: beside the composer when it runs from source, else in src/ of the
 * package from dist/src/stores/redis/compose/ (the repository and a published package both ship src/: package.json "files").
 */
const LUA_DIR = [new URL('../lua/', import.meta.url), new URL('../../../../../src/stores/redis/lua/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((dir) => existsSync(`${dir}policy.lua`));

/** lua — the text of one .lua file, read once. */
const cache = new Map<string, string>();
export function lua(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    if (LUA_DIR === undefined) throw new Error('ratekeeper/redis: cannot find the lua/ folder (looked beside the module and in src/stores/redis/lua of the package)');
    text = readFileSync(`${LUA_DIR}${name}.lua`, 'utf8');
    cache.set(name, text);
  }
  return text;
}

/** sectionsOf — the sections of one .lua file by name (header dropped; leading blank lines and trailing space trimmed). */
const sections = new Map<string, Map<string, string>>();
function sectionsOf(file: string): Map<string, string> {
  let t = sections.get(file);
  if (t === undefined) {
    t = new Map();
    const parts = lua(file).split(/^--@@ (\w+)[ \t]*$/m);
    for (let i = 1; i < parts.length; i += 2) t.set(parts[i], parts[i + 1].replace(/^\n+|\s+$/g, ''));
    sections.set(file, t);
  }
  return t;
}

/** Vars — the values of a template's placeholders: text, or lines of code for a placeholder alone on its line. */
export type Vars = Readonly<Record<string, string | readonly string[]>>;

/** CALL — a line that pastes a section: its indent, the section (`name` or `file.name`), its arguments. */
const CALL = /^([ \t]*)@([\w.]+)(?:\((.*)\))?[ \t]*$/;
/** ALONE — a line holding one placeholder and nothing else. */
const ALONE = /^([ \t]*)\$([A-Z][A-Z0-9_]*)[ \t]*$/;
/** PLACEHOLDER — `$NAME` anywhere in a line. */
const PLACEHOLDER = /\$([A-Z][A-Z0-9_]*)/g;
/** ARGUMENT — `NAME = text` in a call's list. */
const ARGUMENT = /^\s*([A-Z][A-Z0-9_]*)\s*=\s*(.*?)\s*$/;
/** OPERAND — an argument pasted as is: a name, a placeholder or a number. */
const OPERAND = /^\$?[A-Za-z_][A-Za-z0-9_]*$|^[0-9.]+$/;

/**
 * render — section `name` of `file` with every placeholder filled and every call line pasted. `args` — the values a
 * call gave this section (texts that may still hold the caller's placeholders): they are filled first, then `vars`
 * fills what is left, so an argument is pasted in parentheses or not by its text as written, not by its value.
 */
export function render(file: string, name: string, vars: Vars, args: Readonly<Record<string, string>> = {}): string {
  const text = sectionsOf(file).get(name);
  if (text === undefined) throw new Error(`ratekeeper/redis: ${file}.lua has no section ${name}`);
  const where = `${file}.lua (${name})`;
  const withArgs = (t: string): string => t.replace(PLACEHOLDER, (m, n: string) => args[n] ?? m);
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const call = CALL.exec(line);
    if (call !== null) {
      const [, pad, target, list] = call;
      const [f, section] = target.includes('.') ? target.split('.') : [file, target];
      const inner: Record<string, string> = {};
      for (const item of list === undefined || list.trim() === '' ? [] : list.split(',')) {
        const m = ARGUMENT.exec(item);
        if (m === null) throw new Error(`ratekeeper/redis: ${where} calls ${target} with ${item.trim()}, not NAME = text`);
        const a = withArgs(m[2]);
        inner[m[1]] = OPERAND.test(a) ? a : `(${a})`;
      }
      for (const l of render(f, section, vars, inner).split('\n')) out.push(pad + l);
      continue;
    }
    const alone = ALONE.exec(line);
    const value = alone === null || args[alone[2]] !== undefined ? undefined : vars[alone[2]];
    if (alone !== null && typeof value === 'object') {
      if (value.length > 0) for (const l of value.join('\n').split('\n')) out.push(alone[1] + l);
      continue;
    }
    out.push(fill(withArgs(line), vars, where));
  }
  return out.join('\n');
}

/** fill — every `$NAME` of one line of text by its value (a name the values lack is a bug in a template: it throws). */
function fill(text: string, vars: Vars, where: string): string {
  return text.replace(PLACEHOLDER, (_, n: string) => {
    const x = vars[n];
    if (x === undefined) throw new Error(`ratekeeper/redis: ${where} uses $${n}, which the composer does not define`);
    if (typeof x !== 'string') throw new Error(`ratekeeper/redis: ${where} uses $${n}, lines of code, inside a line`);
    return x;
  });
}

/** luaNumber — a JS number as a Lua literal that reads back as the same double (JS prints the shortest such text). */
export function luaNumber(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`ratekeeper/redis: cannot write ${x} into a script`);
  return String(x);
}

/** lit — a number as a Lua literal, negative ones in parentheses (so that `a - $X` never reads as a comment). */
export const lit = (x: number): string => (x < 0 || Object.is(x, -0) ? `(${luaNumber(x)})` : luaNumber(x));

/** indent — two more spaces on every line but the empty ones. */
export const indent = (text: string): string => text.split('\n').map((l) => (l === '' ? l : `  ${l}`)).join('\n');

/** printable — a rule name as it may appear in a Lua line comment: no line break or other control character, and no `$`. */
export const printable = (name: string): string => name.replace(/[^\x20-\x23\x25-\x7e]/g, '?');
