/**
 * The README's Quick start is code users paste: it is typechecked against the package's own types and run
 * (importing 'ratekeeper' by name, which resolves to this package through its "exports"), so it cannot drift.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** section — the README text from `## <title>` to the next heading or section marker. */
function section(title: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf(`## ${title}\n`);
  assert.ok(start >= 0, `README has a "## ${title}" section`);
  const rest = readme.slice(start + title.length + 4);
  const end = rest.search(/\n## |\n<!-- section/);
  return end < 0 ? rest : rest.slice(0, end);
}

it('the Quick start typechecks and runs', () => {
  const blocks = [...section('Quick start').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.ok(blocks.length > 0, 'the Quick start has a ts block');
  const dir = join(root, '.readme-check');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const file = join(dir, 'quickstart.mts');
    writeFileSync(file, `${blocks.join('\n')}\nexport {};\n`);
    const program = ts.createProgram([file], {
      strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022, noEmit: true, skipLibCheck: true, types: ['node'],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    assert.deepEqual(problems, [], 'typechecks');
    const js = join(dir, 'quickstart.mjs');
    writeFileSync(js, ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);
    const run = spawnSync(process.execPath, [js], { encoding: 'utf8', cwd: root });
    assert.equal(run.status, 0, `runs: ${run.stderr}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
