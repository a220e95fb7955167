/**
 * test/support/reporter.test — the `npm test` reporter on a scratch run: one line per file, every failure in full
 * (its path, the assertion, what the file wrote), the summary last; a passing file's output is not shown.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const reporter = fileURLToPath(new URL('./reporter.js', import.meta.url));

it('prints a line per file, failures in full, and the summary last', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rk-reporter-'));
  try {
    writeFileSync(join(dir, 'a.test.mjs'), `import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
describe('suite', () => {
  it('passes', () => {});
  it('fails', () => { console.error('said on stderr'); assert.equal(1, 2); });
  it.skip('skipped', () => {});
  it.todo('a todo that fails', () => { assert.equal(1, 3); });
});\n`);
    writeFileSync(join(dir, 'b.test.mjs'), `import { it } from 'node:test';\nit('ok', () => { console.log('quiet when passing'); });\n`);
    writeFileSync(join(dir, 'c.test.mjs'), `throw new Error('the file crashes');\n`);
    // a helper module that declares tests for the file that imports it: not a test file of its own
    writeFileSync(join(dir, 'helper.mjs'), `import { it } from 'node:test';\nexport function shared() { it('declared in the helper', () => {}); }\n`);
    writeFileSync(join(dir, 'd.test.mjs'), `import { it } from 'node:test';\nimport { shared } from './helper.mjs';\nshared();\nit('its own', () => {});\n`);
    // a run of its own, not a subtest of this one (node:test tells child processes it runs them through NODE_TEST_CONTEXT)
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    delete env.NODE_TEST_CONTEXT;
    const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', `--test-reporter=${reporter}`, dir], { cwd: dir, encoding: 'utf8', env });
    assert.equal(r.status, 1);
    const lines = r.stdout.trimEnd().split('\n');
    assert.deepEqual(lines.slice(0, 4).map((l) => l.replace(/\s+\d+ m?s$/, '').replace(/\s+[\d.]+ s$/, '')), [
      '✖ a.test.mjs  4 tests, 1 failed, 2 skipped',
      '✔ b.test.mjs  1 test',
      '✖ c.test.mjs  0 tests',
      '✔ d.test.mjs  2 tests',
    ]);
    assert.doesNotMatch(r.stdout, /helper\.mjs/, 'a helper module is not listed as a test file');
    assert.match(r.stdout, /── 2 failures ──\n\n✖ a\.test\.mjs › suite › fails\n {4}AssertionError \[ERR_ASSERTION\]: Expected values to be strictly equal:[\s\S]*1 !== 2[\s\S]*said on stderr/);
    assert.match(r.stdout, /✖ c\.test\.mjs\n[\s\S]*Error: the file crashes/);
    assert.doesNotMatch(r.stdout, /quiet when passing/);
    assert.doesNotMatch(r.stdout, /a todo that fails/, 'a failing todo test is expected to fail: not listed as a failure');
    assert.match(lines.at(-1) ?? '', /^✖ 7 tests in 4 files: 3 passed, 2 failed, 2 skipped \([\d.]+ m?s\)$/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
