/**
 * sim/fleet — the local-first mode on a virtual clock: over-admission never passes (N − 1) × maxUnsynced (and reaches
 * it under a flood: the bound is tight), the lead does not grow with time (the long-run rate is exact), for each
 * algorithm the bound is claimed for; `ratekeeper simulate fleet-local` writes the CSV and the plot.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fleetRun } from '../../src/sim/fleet.js';
import { rules } from '../../src/core/rules.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

test('over-admission per algorithm as docs/fleet.md states it: within (N − 1) × maxUnsynced at any time (EARRRL: plus one request), per window or period for the windows and exponential; tight under a flood', () => {
  const grid = [[2, 5, 20], [4, 10, 5], [8, 3, 100], [3, 1, 1], [8, 10, 50]];
  /**
   * allowance — the excess docs/fleet.md states, for N instances, maxUnsynced m, over `duration` ms of a 1 s rule:
   * counted at an instant (admitted so far against the exact mode's), a refilling rule may show one more request than
   * the bound on its state (the two admit at different fractions of a token: m = 1, N = 3 led by 3).
   */
  const cases: [ReturnType<typeof rules.gcra>, (bound: number, duration: number) => number][] = [
    [rules.tokenBucket({ limit: 100, per: '1s' }), (b) => b + 1],
    [rules.gcra({ limit: 100, per: '1s' }), (b) => b + 1],
    [rules.leakyBucket({ limit: 100, per: '1s' }), (b) => b + 1],
    [rules.earrrl({ limit: 100, per: '1s', halfLife: '1s' }), (b) => b + 1],
    [rules.fixedWindow({ limit: 100, per: '1s' }), (b, d) => b * Math.ceil(d / 1000 + 1)],
    [rules.slidingWindow({ limit: 100, per: '1s' }), (b, d) => b * Math.ceil(d / 1000 + 1)],
    [rules.exponential({ limit: 100, per: '1s' }), (b, d) => b * Math.ceil(d / 1000 + 1)],
  ];
  for (const [rule, allowance] of cases) {
    for (const [instances, m, flushEvery] of grid) {
      for (const duration of [2500, 8000]) {
        const r = fleetRun({ rule, instances, maxUnsynced: m, flushEvery, rate: 1500, duration, seed: instances * 7 + m });
        assert.ok(r.over <= allowance(r.bound, duration), `${rule.algorithm} N=${instances} m=${m} flushEvery=${flushEvery} ${duration} ms: over ${r.over} > ${allowance(r.bound, duration)}`);
      }
    }
  }
  const flood = fleetRun({ rule: rules.tokenBucket({ limit: 100, per: '1s' }), instances: 8, maxUnsynced: 10, flushEvery: 50, rate: 2000, duration: 3000 });
  assert.equal(flood.over, flood.bound, 'a flood reaches the bound');
  // the lead does not grow with time (the long-run rate is exact): a run three times as long leads by no more
  const longer = fleetRun({ rule: rules.tokenBucket({ limit: 100, per: '1s' }), instances: 8, maxUnsynced: 10, flushEvery: 50, rate: 2000, duration: 9000 });
  assert.ok(longer.admitted - longer.exact <= flood.bound + 1, `${longer.admitted} vs ${longer.exact}`);
});

test('ratekeeper simulate fleet-local --no-plot writes the grid as CSV, never beyond the bound', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rk-fleet-'));
  try {
    const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, [CLI, 'simulate', 'fleet-local', '--no-plot', '--out', dir], (e, stdout) => (e ? reject(e) : resolve(stdout))));
    assert.match(out, /never beyond the bound/);
    const rows = (await readFile(join(dir, 'fleet-local.csv'), 'utf8')).trim().split('\n');
    assert.equal(rows[0], 'instances,flushEvery_ms,maxUnsynced,admitted,exact,over_admitted_max,bound,syncs');
    assert.equal(rows.length, 1 + 4 * 8);
    for (const row of rows.slice(1)) {
      const f = row.split(',').map(Number);
      assert.ok(f[5] <= f[6], row);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
