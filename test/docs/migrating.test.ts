/**
 * test/docs/migrating — every example of docs/migrating/*.md (and docs/http.md's) runs: a ```ts block tagged
 * `// example: <name>` is transpiled and run as an ES module inside the package (so `ratekeeper/…` resolves to this
 * build by its own name), and what it prints must be its `// prints:` comment lines; a ```yaml block tagged the same
 * way goes through `ratekeeper config check`. Every page of docs/migrating/ has at least one example, so none drifts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const MIGRATING = join(root, 'docs', 'migrating');
const PAGES = [...readdirSync(MIGRATING).filter((f) => f.endsWith('.md')).map((f) => join(MIGRATING, f)), join(root, 'docs', 'http.md')];
/** dir — inside the package's dist/, so that the examples' `ratekeeper` imports resolve to this build. */
const dir = join(root, 'dist', `.docs-examples-${process.pid}`);
after(() => rmSync(dir, { recursive: true, force: true }));

interface Example { page: string; name: string; lang: 'ts' | 'yaml'; code: string }

/** examples — the tagged blocks of one page. */
function examples(page: string): Example[] {
  const text = readFileSync(page, 'utf8');
  const out: Example[] = [];
  for (const m of text.matchAll(/```(ts|yaml)\n([\s\S]*?)```/g)) {
    const tag = /^(?:\/\/|#) example: (\w+)/.exec(m[2]);
    if (tag) out.push({ page: page.slice(root.length + 1), name: tag[1], lang: m[1] as 'ts' | 'yaml', code: m[2] });
  }
  return out;
}

/** expected — the `// prints:` lines of an example, as stdout. */
function expected(code: string): string | undefined {
  const at = code.indexOf('// prints:\n');
  if (at === -1) return undefined;
  return code.slice(at + '// prints:\n'.length).split('\n').filter((l) => l.startsWith('//')).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n';
}

describe('the examples of docs/migrating and docs/http.md run and print what they say', () => {
  mkdirSync(dir, { recursive: true });
  it('every migration page has an example', () => {
    for (const page of PAGES.filter((p) => p.startsWith(MIGRATING))) assert.ok(examples(page).length > 0, `${page} has no tagged example`);
  });
  for (const page of PAGES) {
    for (const ex of examples(page)) {
      it(`${ex.page}: ${ex.name}`, () => {
        if (ex.lang === 'yaml') {
          const file = join(dir, `${ex.name}.yaml`);
          writeFileSync(file, ex.code);
          const r = spawnSync(process.execPath, [join(root, 'dist/src/cli.js'), 'config', 'check', file], { encoding: 'utf8', timeout: 30_000 });
          assert.equal(r.status, 0, r.stdout + r.stderr);
          assert.match(r.stdout, /ok/i, r.stdout);
          return;
        }
        const want = expected(ex.code);
        const file = join(dir, `${ex.page.replace(/\W/g, '_')}-${ex.name}.mjs`);
        writeFileSync(file, ts.transpileModule(ex.code, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText);
        const r = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
        assert.equal(r.status, 0, r.stderr);
        if (want !== undefined) assert.equal(r.stdout, want);
      });
    }
  }
});
