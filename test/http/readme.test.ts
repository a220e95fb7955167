/**
 * test/http/readme — the framework examples of README.md's http section are compiled: every ```ts block tagged
 * `// example: <name>` is typechecked, strict, against the package as users import it (`ratekeeper/express` …,
 * resolved through package.json "exports" to the built declarations), so the README cannot drift from the API.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** examples — the tagged ts blocks of the http section of README.md, by name. */
export function examples(readme: string): Map<string, string> {
  const start = readme.indexOf('<!-- section: http -->');
  const end = readme.indexOf('<!-- /section: http -->');
  assert.ok(start !== -1 && end > start, 'README.md has the http section markers');
  const section = readme.slice(start, end);
  const out = new Map<string, string>();
  for (const m of section.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const tag = /^\/\/ example: (\w+)/.exec(m[1]);
    if (tag) out.set(tag[1], m[1]);
  }
  return out;
}

describe('README http examples', () => {
  it('has a compiled example for every adapter', () => {
    const found = examples(readFileSync(join(root, 'README.md'), 'utf8'));
    assert.deepEqual([...found.keys()].sort(), ['express', 'fastify', 'hono', 'node']);
    // inside the package, so that `ratekeeper/…` resolves to this package by its own name
    const dir = join(root, 'dist', `.readme-examples-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const files = [...found].map(([name, code]) => {
        const file = join(dir, `${name}.ts`);
        writeFileSync(file, code);
        return file;
      });
      const program = ts.createProgram(files, {
        target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
        lib: ['lib.es2022.d.ts'], types: ['node'], strict: true, noEmit: true, skipLibCheck: true, typeRoots: [join(root, 'node_modules/@types')],
      });
      const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
        const where = d.file ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
        return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
      assert.deepEqual(diagnostics, []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the extraction sees a broken example (the check can fail)', () => {
    const broken = '<!-- section: http -->\n```ts\n// example: express\nconst x: number = "no";\n```\n<!-- /section: http -->';
    const dir = join(root, 'dist', `.readme-broken-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const file = join(dir, 'express.ts');
      writeFileSync(file, examples(broken).get('express') as string);
      const program = ts.createProgram([file], { strict: true, noEmit: true, types: [] });
      assert.ok(ts.getPreEmitDiagnostics(program).length > 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
