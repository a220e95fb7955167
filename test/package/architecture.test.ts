/**
 * test/package/architecture — the shape of the house, read from src/ itself:
 * - no import circle anywhere in src/ (type-only imports count: a circle of types is still two files that cannot be
 *   read one without the other);
 * - imports go one way between rooms: core ← stores ← observe ← limiter ← multi ← the entry point, the middleware,
 *   the simulator and the admin ← the service ← the CLI (a room may import its own files and lower rooms only);
 * - no file over LONG lines unless its header says why (a line `Long because …` in its first comment).
 * Each failure names the files, so the message is the fix's starting point.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const src = join(root, 'src');

/** LONG — lines past which a file must say why it is long (the renovation issue's "~400"). */
const LONG = 420;

/** RANK — each room's place in the direction of imports: a file imports from its own room or a lower rank. */
const RANK: Record<string, number> = {
  core: 0,
  stores: 1,
  denialCache: 1,
  observe: 2,
  limiter: 3,
  multi: 4,
  index: 5,
  http: 5,
  sim: 5,
  admin: 5,
  server: 6,
  cli: 7,
};

function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) sources(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** roomOf — the top-level folder (or file, without .ts) of src/ that `file` lives in. */
function roomOf(file: string): string {
  const parts = relative(src, file).split(sep);
  return parts.length === 1 ? parts[0]!.replace(/\.ts$/, '') : parts[0]!;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'|(?:^|\n)\s*import\s+'(\.{1,2}\/[^']+)'|import\(\s*'(\.{1,2}\/[^']+)'\s*\)/g;

/** graph — every src file and the src files it imports (static, type-only and dynamic imports alike). */
function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of sources(src)) {
    const text = readFileSync(f, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      deps.push(resolve(dirname(f), spec).replace(/\.js$/, '.ts'));
    }
    g.set(f, deps);
  }
  return g;
}

/** circles — the strongly connected components of more than one file (Tarjan), and files importing themselves. */
function circles(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        c.push(relative(root, w));
      } while (w !== v);
      if (c.length > 1 || (g.get(v) ?? []).includes(v)) found.push(c.sort());
    }
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('architecture of src/', () => {
  const g = graph();

  it('every relative import names a file that exists', () => {
    const missing: string[] = [];
    for (const [f, deps] of g) for (const d of deps) if (!g.has(d) && !d.endsWith('.json')) missing.push(`${relative(root, f)} → ${relative(root, d)}`);
    assert.deepEqual(missing, []);
  });

  it('has no import circle', () => {
    assert.deepEqual(circles(g).map((c) => c.join(' ⇄ ')), []);
  });

  it('imports go one way between rooms (core ← stores ← observe ← limiter ← multi ← http/sim/admin ← server ← cli)', () => {
    const against: string[] = [];
    for (const [f, deps] of g) {
      const from = roomOf(f);
      assert.ok(from in RANK, `${relative(root, f)}: room '${from}' has no place in RANK (add it)`);
      for (const d of deps) {
        const to = roomOf(d);
        if (to === from) continue;
        assert.ok(to in RANK, `${relative(root, d)}: room '${to}' has no place in RANK (add it)`);
        if (RANK[to]! >= RANK[from]!) against.push(`${relative(root, f)} (${from}) → ${relative(root, d)} (${to})`);
      }
    }
    assert.deepEqual(against, []);
  });

  it(`no file over ${LONG} lines without a "Long because" in its header`, () => {
    const long: string[] = [];
    for (const f of g.keys()) {
      const text = readFileSync(f, 'utf8');
      const lines = text.split('\n').length;
      if (lines <= LONG) continue;
      const header = /^\s*\/\*\*?[\s\S]*?\*\//.exec(text)?.[0] ?? '';
      if (!/Long because/.test(header)) long.push(`${relative(root, f)}: ${lines} lines`);
    }
    assert.deepEqual(long, []);
  });
});
