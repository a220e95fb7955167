/**
 * Hot keys coalesced (batch.ts, issue 19 part 1): the plain checks of one key in one tick go to Redis as one script
 * call, and every check's decision is exactly what the same checks sent one by one (option batch: false, each
 * awaited) would get — for every algorithm, random (now, cost) sequences incl. cost 0 and fractional costs, on
 * standalone Redis and a 3-master Cluster. Also: the batches are counted on the store (stats), huge runs are split at
 * MAX_BATCH, refunds keep their place in order, a script flush (NOSCRIPT) mid-run is recovered.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Cluster, Redis } from 'ioredis';
import { rules } from '../../src/core/rules.js';
import { Policy } from '../../src/core/policy.js';
import type { Decision } from '../../src/core/types.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
import { MAX_BATCH } from '../../src/stores/redis/batch.js';
import { uniquePrefix, useCluster, useRedis } from '../support/redis-suite.js';

const T0 = 1_800_000_000_000;

/** POLICIES — one rule of each algorithm, strict and leaky where it matters, small limits so refusals happen. */
const POLICIES: Record<string, () => Policy> = {
  fixedWindow: () => new Policy({ rules: [rules.fixedWindow({ limit: 5, per: 1_000 })] }),
  slidingWindow: () => new Policy({ rules: [rules.slidingWindow({ limit: 5, per: 1_000, accounting: 'strict' })] }),
  slidingLog: () => new Policy({ rules: [rules.slidingLog({ limit: 5, per: 1_000 })] }),
  tokenBucket: () => new Policy({ rules: [rules.tokenBucket({ limit: 5, per: 1_000, burst: 3 })] }),
  leakyBucket: () => new Policy({ rules: [rules.leakyBucket({ limit: 5, per: 1_000 })] }),
  gcra: () => new Policy({ rules: [rules.gcra({ limit: 5, per: 1_000, burst: 2 })] }),
  earrrl: () => new Policy({ rules: [rules.earrrl({ limit: 5, per: 1_000, halfLife: 500 })] }),
  exponential: () => new Policy({ rules: [rules.exponential({ limit: 5, per: 1_000 })] }),
  twoRules: () => new Policy({ rules: [rules.fixedWindow({ limit: 4, per: 1_000, name: 'a' }), rules.gcra({ limit: 10, per: 2_000, name: 'b', accounting: 'strict' })] }),
};

/** Step — one check: its time offset from the previous one (ms; explicit now) and its cost. */
const step = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400 }), fc.double({ min: 0, max: 50, noNaN: true })),
  cost: fc.oneof(fc.constant(1), fc.constant(0), fc.constantFrom(0.5, 2, 2.5, 7), fc.integer({ min: 0, max: 4 })),
});

const strip = (d: Decision): unknown => JSON.parse(JSON.stringify(d));

function conformance(suite: { client: Redis | Cluster }, where: string): void {
  for (const [name, make] of Object.entries(POLICIES)) {
    test(`${where} ${name}: a batch decides exactly as the same checks one by one`, async () => {
      const batched = new RedisStore({ client: suite.client, prefix: uniquePrefix('batch'), timeout: 10_000 });
      const single = new RedisStore({ client: suite.client, prefix: uniquePrefix('single'), timeout: 10_000, batch: false });
      const policy = make();
      const a = batched.attach(policy) as RedisBound;
      const b = single.attach(policy) as RedisBound;
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 30 }), { minLength: 1, maxLength: 4 }), async (ticks) => {
          const key = `k${run++}:\u00e9{x}%\u0000`;
          let now = T0;
          for (const tick of ticks) {
            const times = tick.map((s) => (now += s.dt));
            // all of one tick at once: one batch; the reference awaits each check before sending the next
            const got = await Promise.all(tick.map((s, i) => a.evaluate(key, s.cost, times[i])));
            const want: Decision[] = [];
            for (let i = 0; i < tick.length; i++) want.push(await b.evaluate(key, tick[i].cost, times[i]));
            assert.deepEqual(got.map(strip), want.map(strip));
          }
        }),
        { numRuns: 25 },
      );
      assert.ok(batched.batcher!.stats.batches > 0);
      batched.close();
      single.close();
    });
  }
}

describe('standalone', () => {
  const suite = useRedis();
  conformance(suite, 'standalone');

  test('the server clock: one TIME for the batch; n checks admit exactly the limit; one script call', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('clock'), timeout: 10_000 });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 100, per: '1h' })] })) as RedisBound;
    await Promise.all([bound.evaluate('warm', 0, undefined), bound.evaluate('warm', 0, undefined)]); // the batch script cached
    suite.server.cli('CONFIG', 'RESETSTAT');
    const ds = await Promise.all(Array.from({ length: 500 }, () => bound.evaluate('hot', 1, undefined)));
    assert.equal(ds.filter((d) => d.allowed).length, 100);
    assert.deepEqual(ds.map((d) => d.allowed), ds.map((_, i) => i < 100), 'in arrival order');
    const stats = suite.server.cli('INFO', 'commandstats');
    const calls = Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0);
    assert.equal(calls, Math.ceil(500 / MAX_BATCH));
    store.close();
  });

  test('100 000 checks of one key in one tick: split at MAX_BATCH, exact, answered in order', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('huge'), timeout: 30_000, maxPending: 10_000 });
    const bound = store.attach(new Policy({ rules: [rules.gcra({ limit: 1_000, per: '1h', burst: 1_000 })] })) as RedisBound;
    const ds = await Promise.all(Array.from({ length: 100_000 }, (_, i) => bound.evaluate('huge', i % 3 === 0 ? 0.5 : 1, T0)));
    let spent = 0;
    const expect = ds.map((_, i) => {
      const c = i % 3 === 0 ? 0.5 : 1;
      if (spent + c <= 1_000 + 1e-9) { spent += c; return true; }
      return false;
    });
    assert.deepEqual(ds.map((d) => d.allowed), expect);
    assert.ok(store.batcher!.stats.largest <= MAX_BATCH);
    assert.equal(store.batcher!.stats.checks, 100_000);
    store.close();
  });

  test('a refund sent after checks of the same tick applies after them (pending batch flushed first)', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('refund'), timeout: 10_000 });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 2, per: '1h' })] })) as RedisBound;
    const checks = [bound.evaluate('r', 1, T0), bound.evaluate('r', 1, T0)];
    const refund = bound.refund('r', 1, T0, false);
    const after = bound.evaluate('r', 1, T0);
    const ds = await Promise.all(checks);
    assert.deepEqual(ds.map((d) => d.allowed), [true, true]);
    await refund;
    assert.equal((await after).allowed, true);
    assert.equal((await bound.evaluate('r', 1, T0)).allowed, false);
    store.close();
  });

  test('NOSCRIPT mid-run (SCRIPT FLUSH): batches are resent by text, nothing charged twice', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('noscript'), timeout: 10_000 });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 50, per: '1h' })] })) as RedisBound;
    let admitted = 0;
    for (let round = 0; round < 4; round++) {
      suite.server.cli('SCRIPT', 'FLUSH');
      const ds = await Promise.all(Array.from({ length: 20 }, () => bound.evaluate('ns', 1, T0)));
      admitted += ds.filter((d) => d.allowed).length;
      assert.ok(ds.every((d) => d.reason !== 'store-unavailable'));
    }
    assert.equal(admitted, 50);
    store.close();
  });

  test('SIGSTOP during a batch: every check answered by the failure policy at its timeout; nothing charged twice', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('stop'), timeout: 300, onError: 'deny' });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 100, per: '1h' })] })) as RedisBound;
    await bound.evaluate('s', 0, T0);
    suite.server.pause();
    let ds: Decision[];
    try {
      ds = await Promise.all(Array.from({ length: 50 }, () => bound.evaluate('s', 1, T0)));
    } finally {
      suite.server.resume();
    }
    assert.ok(ds.every((d) => d.reason === 'store-unavailable' && !d.allowed));
    await new Promise((r) => setTimeout(r, 200));
    // the batch that was sent before the pause either ran whole before the deadline or not at all (LATE): charged at most once
    const look = await bound.evaluate('s', 0, T0);
    assert.ok(look.remaining === 100 || look.remaining === 50, `remaining ${look.remaining}`);
    store.close();
  });
});

describe('cluster', () => {
  const suite = useCluster();
  conformance(suite, 'cluster');
});
