/**
 * yaml — the configuration's YAML as a tree with line numbers: the `yaml` package's document (YAML 1.1, as
 * envoyproxy/ratelimit's yaml.v2 reads it: `yes`/`on` are booleans, `<<` merge keys work), with aliases resolved, merge
 * keys expanded, duplicate and non-string keys reported, and small readers that report a wrong type instead of
 * throwing. Every reader adds its issue to the file's {@link Issues} and returns undefined, so that a walk goes on.
 */
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Document, type Node, type YAMLMap } from 'yaml';
import { show } from '../../core/errors.js';
import { didYouMean } from '../../core/options.js';
import type { Issues } from './errors.js';

/** Source — one parsed file. */
export interface Source {
  file: string;
  doc: Document;
  lines: LineCounter;
  issues: Issues;
  /** reported — lines whose duplicate key the walk reported itself (yaml's own report of them is then dropped). */
  reported: Set<number>;
}

/** Field — one `key: value` of a map, the value's aliases resolved (null for an empty value). */
export interface Field {
  key: string;
  value: Node | null;
  /** line — of the key, 1-based. */
  line: number;
}

/** Fields — a map's fields by key, in document order (merged `<<` fields after the map's own). */
export type Fields = Map<string, Field>;

/** At — where a reader is: the file, the path to the node, and the line to blame when the node has none. */
export interface At {
  src: Source;
  path: string;
  line: number;
}

/**
 * parseYaml — the file's root node (null for an empty file), or undefined when the text is not YAML (the syntax
 * errors are reported, with their lines). A duplicate key is reported by the walk that meets it (with the path and
 * both lines); yaml's own report stands only for maps the walk does not read (metadata).
 */
export function parseYaml(file: string, text: string, issues: Issues): { src: Source; root: Node | null } | undefined {
  const lines = new LineCounter();
  const doc = parseDocument(text, { version: '1.1', uniqueKeys: true, lineCounter: lines, prettyErrors: false, merge: true });
  const src: Source = { file, doc, lines, issues, reported: new Set() };
  const fatal = doc.errors.filter((e) => e.code !== 'DUPLICATE_KEY');
  if (fatal.length > 0) {
    for (const e of fatal) {
      const line = lines.linePos(e.pos[0]).line;
      const why = e.code === 'MULTIPLE_DOCS'
        ? 'a file holds one configuration (one YAML document): put the next one, after `---`, in a file of its own'
        : `not valid YAML: ${e.message.split('\n')[0]}`;
      issues.add(file, line, '', '', undefined, why);
    }
    return undefined;
  }
  return { src, root: resolve(src, doc.contents as Node | null) };
}

/** lateIssues — yaml's duplicate-key errors the walk did not meet and report itself. */
export function lateIssues(src: Source): void {
  for (const e of src.doc.errors) {
    if (e.code !== 'DUPLICATE_KEY') continue;
    const line = src.lines.linePos(e.pos[0]).line;
    if (src.reported.has(line)) continue;
    src.issues.add(src.file, line, '', '', undefined, 'duplicate key: each key may appear once in a map');
  }
}

/** lineOf — the 1-based line where `node` starts, or `fallback`. */
export function lineOf(src: Source, node: Node | null | undefined, fallback = 0): number {
  const start = node?.range?.[0];
  return start === undefined ? fallback : src.lines.linePos(start).line;
}

/** resolve — the node an alias points to (aliases of aliases followed), else the node itself. */
function resolve(src: Source, node: Node | null | undefined): Node | null {
  let n: Node | null | undefined = node;
  for (let hops = 0; n && isAlias(n) && hops < 100; hops++) n = n.resolve(src.doc) as Node | undefined;
  return n ?? null;
}

/** toJs — a node as a plain value, for error messages and metadata. */
export function toJs(src: Source, node: Node | null): unknown {
  if (node === null) return null;
  return node.toJS(src.doc, { maxAliasCount: 1000 });
}

/** kindOf — how an error message calls a node's kind. */
export function kindOf(src: Source, node: Node | null): string {
  if (node === null) return 'nothing';
  if (isMap(node)) return 'a map';
  if (isSeq(node)) return 'a list';
  return show(toJs(src, node));
}

/** isNonStringKey — keys yaml.v2 would not read as strings (numbers, booleans, null, collections). */
function keyText(node: Node | null): string | undefined {
  if (node !== null && isScalar(node) && typeof node.value === 'string') return node.value;
  return undefined;
}

/**
 * fields — the fields of a map (merge keys expanded: the map's own fields win, then earlier merged maps), or
 * undefined after reporting that `node` is not a map. Non-string keys and duplicate keys are reported and skipped.
 */
export function fields(at: At, node: Node | null, field: string, what = 'a map'): Fields | undefined {
  if (node === null || !isMap(node)) {
    at.src.issues.add(at.src.file, lineOf(at.src, node, at.line), at.path, field, toJs(at.src, node),
      `${field} must be ${what}, got ${kindOf(at.src, node)}`);
    return undefined;
  }
  const out: Fields = new Map();
  const merges: Node[] = [];
  collect(at, node, out, merges);
  for (const m of merges) {
    const target = resolve(at.src, m);
    const sources = target !== null && isSeq(target) ? target.items.map((i) => resolve(at.src, i as Node)) : [target];
    for (const s of sources) {
      if (s === null || !isMap(s)) {
        at.src.issues.add(at.src.file, lineOf(at.src, m, at.line), at.path, '<<', toJs(at.src, s), `a merge key (<<) must refer to a map or a list of maps, got ${kindOf(at.src, s)}`);
        continue;
      }
      const extra: Fields = new Map();
      collect(at, s, extra, []);
      for (const [k, f] of extra) if (!out.has(k)) out.set(k, f);
    }
  }
  return out;
}

function collect(at: At, map: YAMLMap, out: Fields, merges: Node[]): void {
  for (const pair of map.items) {
    const keyNode = resolve(at.src, pair.key as Node | null);
    const line = lineOf(at.src, pair.key as Node | null, lineOf(at.src, map, at.line));
    if (keyNode !== null && isScalar(keyNode) && typeof keyNode.value === 'symbol') {
      merges.push(pair.value as Node);
      continue;
    }
    const key = keyText(keyNode);
    if (key === undefined) {
      at.src.issues.add(at.src.file, line, at.path, show(toJs(at.src, keyNode)), toJs(at.src, keyNode),
        `key ${show(toJs(at.src, keyNode))} is not a string: every key of the configuration is a name such as \`domain\` or \`rate_limit\``);
      continue;
    }
    const prior = out.get(key);
    if (prior !== undefined) {
      at.src.reported.add(line);
      at.src.issues.add(at.src.file, line, at.path, key, toJs(at.src, resolve(at.src, pair.value as Node | null)),
        `${key} is given twice (first at line ${prior.line}): each key may appear once in a map`);
      continue;
    }
    out.set(key, { key, value: resolve(at.src, pair.value as Node | null), line });
  }
}

/**
 * unknownFields — reports every field of `f` not in `known`, with a did-you-mean (from `known`, or `hints` for names
 * that are not typos of a known one: `ratelimit` → `rate_limit`, `limit` → `requests_per_unit`).
 */
export function unknownFields(at: At, f: Fields, known: ReadonlySet<string>, where: string, hints: Readonly<Record<string, string>> = {}): void {
  for (const [k, field] of f) {
    if (known.has(k)) continue;
    const hint = hints[k] !== undefined ? ` (did you mean \`${hints[k]}\`?)` : didYouMean(k, known);
    at.src.issues.add(at.src.file, field.line, at.path, k, toJs(at.src, field.value),
      `${k} is not a field of ${where}${hint || `: use ${[...known].join(', ')}`}`);
  }
}

/** items — the items of a list (aliases resolved), or undefined after reporting that `node` is not a list. */
export function items(at: At, node: Node | null, field: string, what = 'a list'): (Node | null)[] | undefined {
  if (node === null || !isSeq(node)) {
    at.src.issues.add(at.src.file, lineOf(at.src, node, at.line), at.path, field, toJs(at.src, node),
      `${field} must be ${what}, got ${kindOf(at.src, node)}`);
    return undefined;
  }
  return node.items.map((i) => resolve(at.src, i as Node | null));
}

/**
 * text — a scalar as text, as yaml.v2 reads a scalar into a Go string: a string as is, any other scalar (a number,
 * a boolean) as written in the file (`value: 500` is `"500"`, `value: 0.50` is `"0.50"`); null/empty is `''`.
 * Collections are reported and give undefined.
 */
export function text(at: At, f: Field, what = 'a string'): string | undefined {
  const n = f.value;
  if (n === null) return '';
  if (isScalar(n)) {
    if (n.value === null) return '';
    if (typeof n.value === 'string') return n.value;
    return n.source ?? String(n.value);
  }
  at.src.issues.add(at.src.file, f.line, at.path, f.key, toJs(at.src, n), `${f.key} must be ${what}, got ${kindOf(at.src, n)}`);
  return undefined;
}

/** scalar — the plain value of a field (null for an empty one), or undefined after reporting a collection. */
export function scalar(at: At, f: Field, what: string): unknown {
  const n = f.value;
  if (n === null) return null;
  if (isScalar(n)) return n.value;
  at.src.issues.add(at.src.file, f.line, at.path, f.key, toJs(at.src, n), `${f.key} must be ${what}, got ${kindOf(at.src, n)}`);
  return undefined;
}

/** bool — a boolean field (`true`/`false`, and YAML 1.1's `yes`/`no`/`on`/`off`); an empty value is false. */
export function bool(at: At, f: Field | undefined): boolean | undefined {
  if (f === undefined) return false;
  const v = scalar(at, f, 'true or false');
  if (v === undefined) return undefined;
  if (v === null) return false;
  if (typeof v === 'boolean') return v;
  at.src.issues.add(at.src.file, f.line, at.path, f.key, v, `${f.key} must be true or false, got ${show(v)}`);
  return undefined;
}

/** isMapNode, isSeqNode — re-exported guards, so that callers import yaml from one place. */
export const isMapNode = (n: Node | null): boolean => n !== null && isMap(n);
export const isSeqNode = (n: Node | null): boolean => n !== null && isSeq(n);
