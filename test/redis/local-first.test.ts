/**
 * The local-first mode's bound (docs/fleet.md), with real processes: N = 4 processes hammer one key, each
 * deciding on its own copy and syncing by maxUnsynced / flushEvery; what they admit together is within
 * [exact, exact + (N − 1) × maxUnsynced] for every algorithm decided locally, on a standalone server and on the
 * 3-master Cluster, and the script calls per check (INFO commandstats) are at most 1 / maxUnsynced.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisCluster, RedisServer } from '../support/redis.js';
import { fleet } from './local-first-fleet.js';

/** EXACT — what the exact mode admits of 100/1h hammered at once (EARRRL: its burst 1 + (limit/per)/λ with halfLife = per). */
const EXACT: Record<string, number> = { fixedWindow: 100, slidingWindow: 100, slidingLog: 100, tokenBucket: 100, leakyBucket: 100, gcra: 100, exponential: 100, earrrl: 145 };
const N = 4;
const M = 5;
/**
 * EVERY — flushEvery, ms. A copy is stale flushEvery after its sync was sent: when a loaded machine's round trip passes it,
 * every answer is already stale and each check refetches (then goes to the exact mode), so the calls per check rise;
 * 50 ms keeps that out of a parallel test run.
 */
const EVERY = 50;

/** scriptCalls — EVAL and EVALSHA calls served so far by these servers (INFO commandstats). */
function scriptCalls(servers: RedisServer[]): number {
  let n = 0;
  for (const s of servers) {
    const info = s.cli('INFO', 'commandstats');
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  }
  return n;
}

/** awayFromBoundary — waits while Redis's clock is within 15 s of an epoch hour, where windows of 1h legitimately restart. */
async function awayFromBoundary(s: RedisServer): Promise<void> {
  const [sec] = s.cli('TIME').split('\n').map(Number);
  const into = (sec * 1000) % 3_600_000;
  if (into > 3_600_000 - 15_000) await new Promise((r) => setTimeout(r, 3_600_000 - into + 1_000));
}

const ALGORITHMS = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'] as const;

describe('standalone', () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });
  for (const algorithm of ALGORITHMS) {
    test(`${algorithm}: ${N} processes × 500 checks (50 in flight) on one key, maxUnsynced ${M}: admitted within [exact, exact + (N − 1) × ${M}], script calls per check <= 1/${M}`, async () => {
      await awayFromBoundary(server);
      const calls = scriptCalls([server]);
      const rs = await fleet({ ports: [server.port], cluster: false, algorithm, limit: 100, per: '1h', checks: 500, inFlight: 50, maxUnsynced: M, flushEvery: EVERY });
      const used = scriptCalls([server]) - calls - N; // less each worker's warm-up peek
      const admitted = rs.reduce((a, r) => a + r.admitted, 0);
      assert.equal(rs.reduce((a, r) => a + r.unavailable, 0), 0);
      const exact = EXACT[algorithm];
      assert.ok(admitted >= exact && admitted <= exact + (N - 1) * M, `admitted ${admitted}, bound [${exact}, ${exact + (N - 1) * M}]`);
      // a leaky rule charges only what it admits; a strict one (earrrl) every check: one call per M units charged,
      // plus per instance its first fetch, its last partial flush, and per flushEvery of the run a refetch of a stale copy,
      // a partial flush and a check sent to the exact mode after its waits
      const charged = algorithm === 'earrrl' ? N * 500 : admitted;
      const extra = N * (4 + (3 * Math.max(...rs.map((r) => r.elapsed))) / EVERY);
      assert.ok(used <= charged / M + extra, `${used} script calls for ${N * 500} checks, ${charged} units charged, ${extra} allowed beyond`);
      for (const r of rs) assert.equal(r.stats.unsynced, 0);
    });
  }
});

describe('mixed modes (a rolling upgrade)', () => {
  let server: RedisServer;
  before(async () => {
    server = await RedisServer.start();
  });
  after(async () => {
    await server.stop();
  });
  for (const algorithm of ['gcra', 'tokenBucket', 'fixedWindow', 'slidingLog'] as const) {
    test(`${algorithm}: 2 processes in the exact mode and 2 in local-first on one key share one state: admitted within [100, 100 + 2 × ${M}]`, async () => {
      await awayFromBoundary(server);
      const rs = await fleet({ ports: [server.port], cluster: false, algorithm, limit: 100, per: '1h', checks: 500, inFlight: 50, maxUnsynced: M, flushEvery: 20 },
        N, undefined, (i) => (i < 2 ? { maxUnsynced: 0 } : {}));
      const admitted = rs.reduce((a, r) => a + r.admitted, 0);
      assert.equal(rs.reduce((a, r) => a + r.unavailable, 0), 0);
      assert.ok(admitted >= 100 && admitted <= 100 + 2 * M, `admitted ${admitted}`);
      // (the exact instances may admit none: the local-first ones answer in-process and take the budget first)
    });
  }
});

describe('cluster', () => {
  let cluster: RedisCluster;
  before(async () => {
    cluster = await RedisCluster.start();
  });
  after(async () => {
    await cluster.stop();
  });
  for (const algorithm of ALGORITHMS) {
    test(`${algorithm} on the 3-master Cluster: ${N} processes × 500 checks, admitted within [exact, exact + (N − 1) × ${M}]`, async () => {
      await awayFromBoundary(cluster.nodes[0]);
      const calls = scriptCalls(cluster.nodes);
      const rs = await fleet({ ports: cluster.nodes.map((n) => n.port), cluster: true, algorithm, limit: 100, per: '1h', checks: 500, inFlight: 50, maxUnsynced: M, flushEvery: EVERY });
      const used = scriptCalls(cluster.nodes) - calls - N;
      const admitted = rs.reduce((a, r) => a + r.admitted, 0);
      assert.equal(rs.reduce((a, r) => a + r.unavailable, 0), 0);
      const exact = EXACT[algorithm];
      assert.ok(admitted >= exact && admitted <= exact + (N - 1) * M, `admitted ${admitted}, bound [${exact}, ${exact + (N - 1) * M}]`);
      const charged = algorithm === 'earrrl' ? N * 500 : admitted;
      const extra = N * (4 + (3 * Math.max(...rs.map((r) => r.elapsed))) / EVERY);
      assert.ok(used <= charged / M + extra, `${used} script calls for ${N * 500} checks, ${charged} units charged, ${extra} allowed beyond`);
      for (const r of rs) assert.equal(r.stats.unsynced, 0);
    });
  }
});
