/**
 * The local-first mode's bound as a property (fast-check): N instances (each its own store, in this process) against
 * one real Redis, random interleavings of checks of random costs, flushes sent and awaited at random points, and
 * flushes left in flight: the cost admitted on one key never exceeds the limit + (N − 1) × maxUnsynced (a rule that
 * does not refill within the run: the exact mode would admit at most the limit), and once everything is flushed Redis
 * holds exactly what was charged (each flush applied once). The sliding log too: one rule, several rules over one
 * log, a log beside a token bucket (each charge filed in Redis's log at its own time).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { RedisServer } from '../support/redis.js';
import { limiter, type Limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import { redisStore, type RedisStore } from '../../src/stores/redis/index.js';

let server: RedisServer;
let client: Redis;
before(async () => {
  server = await RedisServer.start();
  client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
});
after(async () => {
  client.disconnect();
  await server.stop();
});

/** BASE — an explicit time well inside an epoch hour (1h windows do not roll over during a run). */
const BASE = 480_000 * 3_600_000 + 1_000;

type Step = { kind: 'check'; who: number; cost: number; wait: boolean } | { kind: 'flush'; who: number; wait: boolean };

const step = (n: number): fc.Arbitrary<Step> => fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('check' as const), who: fc.nat(n - 1), cost: fc.integer({ min: 1, max: 3 }), wait: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('flush' as const), who: fc.nat(n - 1), wait: fc.boolean() }) },
);

/**
 * Shape — the policy under test: one rule of an algorithm, or the sliding log's shapes: several slidingLog rules over
 * one log (`logs`: the 1h rule binds, a 2h one beside it), and a log beside a token bucket (`log+bucket`). The first
 * rule has the smallest limit and binds: an exact look after the run has `limit − admitted` left.
 */
type Shape = 'fixedWindow' | 'tokenBucket' | 'gcra' | 'slidingLog' | 'logs' | 'log+bucket';

function policyRules(shape: Shape, limit: number, accounting: 'leaky' | 'strict'): RuleConfig[] {
  if (shape === 'logs') return [rules.slidingLog({ limit, per: '1h', accounting, name: 'h' }), rules.slidingLog({ limit: limit + 7, per: '2h', accounting, name: '2h' })];
  if (shape === 'log+bucket') return [rules.slidingLog({ limit, per: '1h', accounting, name: 'log' }), rules.tokenBucket({ limit: limit + 3, per: '1h', accounting, name: 'bucket' })];
  return [rules[shape]({ limit, per: '1h', accounting })];
}

const CASES: [Shape, 'fetch' | 'fresh', 'leaky' | 'strict'][] = [
  ['fixedWindow', 'fetch', 'leaky'], ['tokenBucket', 'fetch', 'leaky'], ['gcra', 'fetch', 'leaky'], ['gcra', 'fresh', 'leaky'], ['tokenBucket', 'fresh', 'strict'],
  ['slidingLog', 'fetch', 'leaky'], ['slidingLog', 'fresh', 'strict'], ['logs', 'fetch', 'leaky'], ['logs', 'fetch', 'strict'], ['log+bucket', 'fetch', 'leaky'], ['log+bucket', 'fresh', 'leaky'],
];

for (const [algorithm, cold, accounting] of CASES) {
  // cold 'fresh': a copy may start from a fresh state, so the bound is N × maxUnsynced
  const extra = (n: number, m: number): number => (cold === 'fresh' ? n * m : (n - 1) * m);
  test(`${algorithm} (cold: ${cold}, ${accounting}): random interleavings of N instances and flushes never admit more than limit + ${cold === 'fresh' ? 'N' : '(N − 1)'} × maxUnsynced; Redis ends with exactly what was charged`, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 5 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 5, max: 40 }), fc.array(step(5), { minLength: 20, maxLength: 160 }), async (n, m, limit, steps) => {
        const prefix = `lfp:${algorithm}:${cold}:${accounting}:${run++}:`;
        const stores: RedisStore[] = [];
        const lims: Limiter[] = [];
        for (let i = 0; i < n; i++) {
          const store = redisStore({ client, prefix, localFirst: { maxUnsynced: m, flushEvery: '60s', cold } });
          stores.push(store);
          lims.push(limiter({ rules: policyRules(algorithm, limit, accounting), store }));
        }
        let admitted = 0;
        /** most — the most admitted at any moment (checked once every check has settled: a loose one may settle after a failure). */
        let most = 0;
        let t = BASE;
        const loose: Promise<unknown>[] = [];
        for (const s of steps) {
          const who = s.who % n;
          t += 1;
          if (s.kind === 'flush') {
            const p = stores[who].flush();
            if (s.wait) await p;
            else loose.push(p);
            continue;
          }
          const p = lims[who].check('k', { cost: s.cost, now: t }).then((d) => {
            if (d.allowed) admitted += s.cost;
            if (admitted > most) most = admitted;
          });
          if (s.wait) await p;
          else loose.push(p);
        }
        await Promise.all(loose);
        await Promise.all(stores.map((s) => s.flush()));
        assert.ok(most <= limit + extra(n, m), `admitted ${most} > ${limit} + ${extra(n, m)}`);
        for (const s of stores) await s.close();
        if (accounting === 'strict') return; // refusals were charged too: the state is not limit − admitted
        // every admitted unit is in Redis once: an exact look at the same time sees limit − admitted left (or nothing)
        const exact = limiter({ rules: policyRules(algorithm, limit, accounting), store: redisStore({ client, prefix }) });
        const d = await exact.peek('k', { now: t });
        assert.equal(d.remaining, Math.max(0, limit - admitted), `remaining ${d.remaining} after ${admitted} admitted of ${limit}`);
      }),
      { numRuns: 60 },
    );
  });
}
