/**
 * test/admin/docs — the examples of docs/admin.md (```ts blocks tagged `// example: <name>`) are typechecked, strict,
 * against the package as users import it (`ratekeeper`, `ratekeeper/admin` resolved through package.json "exports"),
 * and the library example is run: the page cannot drift from the API.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

function examples(): Map<string, string> {
  const text = readFileSync(join(root, 'docs/admin.md'), 'utf8');
  const out = new Map<string, string>();
  for (const m of text.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const tag = /^\/\/ example: (\w+)/.exec(m[1]);
    if (tag) out.set(tag[1], m[1]);
  }
  return out;
}

it('docs/admin.md: every example typechecks; the library one runs', () => {
  const found = examples();
  assert.deepEqual([...found.keys()].sort(), ['library', 'mount', 'serve']);
  const dir = join(root, 'dist', `.admin-doc-examples-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  try {
    const files = [...found].map(([name, code]) => {
      const file = join(dir, `${name}.ts`);
      writeFileSync(file, code);
      return file;
    });
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts'], types: ['node'], strict: true, noEmit: true, skipLibCheck: true, typeRoots: [join(root, 'node_modules/@types')],
    };
    const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram(files, options)).map((d) =>
      `${d.file ? d.file.fileName.slice(dir.length + 1) : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    assert.deepEqual(diagnostics, []);
    const js = ts.transpileModule(found.get('library')!, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } }).outputText;
    writeFileSync(join(dir, 'library.mjs'), js);
    const r = spawnSync(process.execPath, [join(dir, 'library.mjs')], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), '1 user:1 1 0 1');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
