/**
 * The README's code is code users paste: every ```ts and ```js block is compiled or run by a test, so none can
 * drift. This file runs the Quick start (typechecked strict, then run: its printed decisions are checked), the
 * CommonJS example (run as CommonJS: `require('ratekeeper')`), and checks that the Decision block is the exported
 * type; the redis section's block runs in test/redis/readme.test.ts (a real server and cluster), the http section's
 * tagged examples in test/http/readme.test.ts. A block none of them covers fails here.
 * Imports of 'ratekeeper' resolve to this package by its own name, through package.json "exports".
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** Block — a fenced ts/js block: its language, code, and the section (`## …` heading or section marker) it is in. */
interface Block { lang: 'ts' | 'js'; code: string; heading: string; section: string | undefined }

/** blocks — every ```ts and ```js block of the README, in order. */
function blocks(text: string): Block[] {
  const out: Block[] = [];
  let heading = '';
  let section: string | undefined;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const h = /^## (.*)$/.exec(line);
    if (h) heading = h[1] ?? '';
    const open = /^<!-- section: (\w+) -->$/.exec(line);
    if (open) section = open[1];
    if (/^<!-- \/section: \w+ -->$/.test(line)) section = undefined;
    const fence = /^```(\w*)$/.exec(line);
    if (!fence) continue;
    let j = i + 1;
    while (j < lines.length && lines[j] !== '```') j++;
    const lang = fence[1];
    if (lang === 'ts' || lang === 'js') out.push({ lang, code: lines.slice(i + 1, j).join('\n') + '\n', heading, section });
    i = j;
  }
  return out;
}

/** covered — which test runs a block, or undefined when none does. */
function covered(b: Block): string | undefined {
  if (b.section === 'redis') return 'test/redis/readme.test.ts';
  if (b.section === 'http' && /^\/\/ example: \w+/.test(b.code)) return 'test/http/readme.test.ts';
  if (b.heading === 'Quick start' && b.lang === 'ts') return 'quick start';
  if (b.lang === 'js' && b.code.includes("require('ratekeeper')")) return 'commonjs';
  if (/^interface Decision \{/.test(b.code)) return 'decision';
  return undefined;
}

const dir = join(root, `.readme-check-${process.pid}`); // inside the package: 'ratekeeper' resolves to it

function typecheck(file: string): string[] {
  const program = ts.createProgram([file], {
    strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, noEmit: true, skipLibCheck: true, types: ['node'],
  });
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

it('every ts and js block of the README is run or compiled by a test', () => {
  const all = blocks(readme);
  assert.ok(all.length >= 8, `found ${all.length} blocks`);
  const orphans = all.filter((b) => covered(b) === undefined).map((b) => `${b.heading}: ${b.code.split('\n')[0]}`);
  assert.deepEqual(orphans, [], 'blocks no test covers');
  assert.equal(all.filter((b) => covered(b) === 'quick start').length, 1);
  assert.equal(all.filter((b) => covered(b) === 'test/redis/readme.test.ts').length, 1, 'test/redis/readme runs the one redis block');
  // a block outside every known shape is an orphan: the check can fail
  assert.equal(covered({ lang: 'ts', code: 'const x = 1;\n', heading: 'Somewhere', section: undefined }), undefined);
});

it('the Quick start typechecks (strictest flags) and runs, printing its decisions in whole ms', () => {
  const [quick] = blocks(readme).filter((b) => covered(b) === 'quick start');
  assert.ok(quick);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const file = join(dir, 'quickstart.mts');
    writeFileSync(file, `${quick.code}\nexport {};\n`);
    assert.deepEqual(typecheck(file), [], 'typechecks');
    const js = join(dir, 'quickstart.mjs');
    writeFileSync(js, ts.transpileModule(quick.code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);
    const run = spawnSync(process.execPath, [js], { encoding: 'utf8', cwd: root });
    assert.equal(run.status, 0, `runs: ${run.stderr}`);
    assert.equal(run.stderr, '');
    const lines = run.stdout.trimEnd().split('\n');
    // EARRRL admits 8 at once (7.2 fit under 0.5/s at 0.069/s each, judged on the estimate before the request)
    assert.deepEqual(lines.slice(0, 8), [7, 6, 5, 4, 3, 2, 1, 0].map((left, i) => `request ${i + 1}: allowed (${left} left)`));
    assert.equal(lines.length, 10);
    for (const line of lines.slice(8)) assert.match(line, /^request (9|10): limited \(retry in \d+ ms\)$/, 'whole ms');
    const [r9, r10] = lines.slice(8).map((l) => Number(/retry in (\d+) ms/.exec(l)?.[1]));
    assert.ok(r9 !== undefined && r10 !== undefined && r10 > r9, 'a refused attempt counts: the retry grows');
    // the comment under the block shows these numbers (3191 ms with no time between the requests)
    assert.ok(quick.code.includes('request 9: limited (retry in 3191 ms)'));
    assert.ok(Math.abs(3191 - r9) < 100, `request 9: retry in ${r9} ms`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('the CommonJS example runs as CommonJS (require of the ES module, Node >= 20.19)', () => {
  const cjs = blocks(readme).filter((b) => covered(b) === 'commonjs');
  assert.equal(cjs.length, 1);
  mkdirSync(dir, { recursive: true });
  try {
    const file = join(dir, 'example.cjs');
    writeFileSync(file, cjs[0]?.code ?? '');
    const run = spawnSync(process.execPath, [file], { encoding: 'utf8', cwd: root });
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    if (major > 20 || minor >= 19) {
      assert.equal(run.status, 0, run.stderr);
      assert.equal(run.stdout, '9\n', 'prints what its comment says');
    } else {
      assert.match(run.stderr, /ERR_REQUIRE_ESM/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

it('the Decision block is the exported Decision type (each assignable to the other)', () => {
  const [decision] = blocks(readme).filter((b) => covered(b) === 'decision');
  assert.ok(decision);
  mkdirSync(dir, { recursive: true });
  try {
    const file = join(dir, 'decision.mts');
    const shown = decision.code.replace('interface Decision', 'interface Shown').replace('RuleOutcome[]', 'import("ratekeeper").RuleOutcome[]');
    writeFileSync(file, `import type { Decision } from 'ratekeeper';\n${shown}\ndeclare const a: Decision;\ndeclare const b: Shown;\nexport const x: Shown = a;\nexport const y: Decision = b;\n`);
    assert.deepEqual(typecheck(file), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
