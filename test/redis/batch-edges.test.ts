/**
 * Hot keys coalesced, at their edges (batch.ts): costs at the ends of the doubles — 1e15 (the limiter's largest), 1e21,
 * 1e308, Number.MAX_VALUE, 0.1, digits past a double's precision, 0, mixed in one tick — sent as a count (`'*', n,
 * cost`) or as (now, cost) pairs, decide exactly as the same checks one by one (explicit now) and as the memory store
 * at one instant (the server's clock: one TIME per batch); and `maxPending` with 10 000 checks of one key in one tick:
 * each part of 64 is one pending command, a check that would start one more is answered by the failure policy at
 * once, and nothing waits beyond 64 × maxPending checks.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rules } from '../../src/core/rules.js';
import { Policy } from '../../src/core/policy.js';
import type { Decision } from '../../src/core/types.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
import { MAX_BATCH } from '../../src/stores/redis/batch.js';
import { uniquePrefix, useRedis } from '../support/redis-suite.js';

const T0 = 1_800_000_000_000;

/** COSTS — the costs of one tick's checks of one key. */
const COSTS: number[][] = [
  [1e21, 1e21, 1e21], [1e308, 1e308], [Number.MAX_VALUE, Number.MAX_VALUE], [1e15, 1e15, 1e15],
  [0.1, 0.1, 0.1, 0.1, 0.1], [0.30000000000000004, 0.30000000000000004], [123456789.123456789, 123456789.123456789, 123456789.123456789],
  [0, 0, 0], [2.5, 2.5, 2.5], [1, 1e21, 0, 0.5, 1e308, 1e15, 0.1],
];

/**
 * POLICIES — small limits (huge costs refused, small ones admitted) and limits as large as a cost may be. The buckets
 * hold 1e15 but refill at 1 an hour: a bucket refilling 1e15 an hour would refill a cost of 2.5 in nanoseconds, its
 * state written with a 1 ms expiry, gone between the one-by-one checks (real time) that the batch decides at once.
 */
const POLICIES: Record<string, () => Policy> = {
  fixedWindow: () => new Policy({ rules: [rules.fixedWindow({ limit: 1e15, per: '1h' })] }),
  slidingWindow: () => new Policy({ rules: [rules.slidingWindow({ limit: 5, per: '1h', accounting: 'strict' })] }),
  slidingLog: () => new Policy({ rules: [rules.slidingLog({ limit: 1e15, per: '1h' })] }),
  tokenBucket: () => new Policy({ rules: [rules.tokenBucket({ limit: 1, per: '1h', burst: 1e15 })] }),
  leakyBucket: () => new Policy({ rules: [rules.leakyBucket({ limit: 5, per: '1h' })] }),
  gcra: () => new Policy({ rules: [rules.gcra({ limit: 1, per: '1h', burst: 1e15 })] }),
  earrrl: () => new Policy({ rules: [rules.earrrl({ limit: 5, per: '1h', halfLife: '10m' })] }),
  exponential: () => new Policy({ rules: [rules.exponential({ limit: 5, per: '1h' })] }),
};

/**
 * AT_ONCE — the buckets as large as a cost may be and refilling as fast (1e15 an hour), for the server-clock part, where
 * a key's checks all run in one script (one instant: no expiry between them). A bucket of burst 1e15 refilling at 1 an
 * hour has decisions of ~1e15 ms, whose last digits depend on where the server's clock falls.
 */
const AT_ONCE: Record<string, () => Policy> = {
  tokenBucket: () => new Policy({ rules: [rules.tokenBucket({ limit: 1e15, per: '1h', burst: 1e15 })] }),
  gcra: () => new Policy({ rules: [rules.gcra({ limit: 1e15, per: '1h', burst: 1e15 })] }),
};

/** ONE_INSTANT — the algorithms whose decisions on a fresh key do not depend on where `now` falls (no window edge). */
const ONE_INSTANT = new Set(['tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential']);

const strip = (d: Decision): unknown => JSON.parse(JSON.stringify(d));

describe('standalone', () => {
  const suite = useRedis();

  for (const [name, make] of Object.entries(POLICIES)) {
    test(`${name}: huge, tiny, fractional and mixed costs in one tick decide as one by one (explicit now) and as the memory store (server clock)`, async () => {
      const policy = make();
      const batched = new RedisStore({ client: suite.client, prefix: uniquePrefix('edge'), timeout: 10_000 });
      const single = new RedisStore({ client: suite.client, prefix: uniquePrefix('edge1'), timeout: 10_000, batch: false });
      const a = batched.attach(policy) as RedisBound;
      const b = single.attach(policy) as RedisBound;
      const instant = AT_ONCE[name]?.() ?? policy;
      const c = batched.attach(instant) as RedisBound;
      try {
        for (const [i, costs] of COSTS.entries()) {
          const key = `k${i}`;
          const got = await Promise.all(costs.map((c) => a.evaluate(key, c, T0)));
          const want: Decision[] = [];
          for (const c of costs) want.push(await b.evaluate(key, c, T0));
          assert.deepEqual(got.map(strip), want.map(strip), `costs ${costs.join(', ')}`);
          const [va, vb] = await Promise.all([suite.client.getBuffer(a.redisKey(key)), suite.client.getBuffer(b.redisKey(key))]);
          assert.equal(va?.toString('hex'), vb?.toString('hex'), `the value after costs ${costs.join(', ')}`);
          if (!ONE_INSTANT.has(name)) continue;
          // the server's clock: one TIME for the batch (a run of one cost goes as its count), so the checks are the
          // memory store's at one instant
          const memory = new MemoryStore().attach(instant);
          const clocked = await Promise.all(costs.map((x) => c.evaluate(`s${i}`, x, undefined)));
          assert.deepEqual(clocked.map(strip), costs.map((x) => strip(memory.evaluate(`s${i}`, x, T0) as Decision)), `server clock, costs ${costs.join(', ')}`);
        }
        assert.equal(batched.failures, 0);
        assert.ok(batched.batcher!.stats.batches >= COSTS.length);
      } finally {
        batched.close();
        single.close();
      }
    });
  }

  test('maxPending 3, 10 000 checks of one key and then one of another in one tick: 3 parts of 64 sent, the rest answered by the failure policy at once', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('pend'), timeout: 10_000, maxPending: 3, onError: 'deny' });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 1e9, per: '1h' })] })) as RedisBound;
    try {
      await Promise.all([bound.evaluate('warm', 0, undefined), bound.evaluate('warm', 0, undefined)]);
      const before = store.batcher!.stats.checks;
      const hot = Array.from({ length: 10_000 }, () => bound.evaluate('hot', 1, undefined));
      const other = bound.evaluate('other', 1, undefined);
      assert.ok(store.pending <= 3, `${store.pending} commands pending`);
      const ds = await Promise.all(hot);
      const sent = 3 * MAX_BATCH;
      // in arrival order: the first three parts decided by Redis, every later check (each would start a fourth) refused
      assert.deepEqual(ds.map((d) => d.reason), ds.map((_, i) => (i < sent ? 'allowed' : 'store-unavailable')));
      assert.equal((await other).reason, 'store-unavailable');
      assert.equal(store.batcher!.stats.checks - before, sent);
      assert.equal(1e9 - (await bound.evaluate('hot', 0, undefined)).remaining, sent, 'only the checks Redis decided are charged');
      // the next tick has the budget back
      assert.ok((await Promise.all(Array.from({ length: 100 }, () => bound.evaluate('hot', 1, undefined)))).every((d) => d.allowed));
    } finally {
      store.close();
    }
  });

  test('a hung server: 10 000 checks of one key wait as at most maxPending parts of 64 and are all answered at the timeout', async () => {
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('hung'), timeout: 200, maxPending: 10, onError: 'deny' });
    const bound = store.attach(new Policy({ rules: [rules.fixedWindow({ limit: 1e9, per: '1h' })] })) as RedisBound;
    await Promise.all([bound.evaluate('warm', 0, undefined), bound.evaluate('warm', 0, undefined)]);
    const before = store.batcher!.stats.checks;
    suite.server.pause();
    try {
      const t0 = performance.now();
      const ds = await Promise.all(Array.from({ length: 10_000 }, () => bound.evaluate('hot', 1, undefined)));
      assert.ok(performance.now() - t0 < 2_000, 'answered by the timeout, not by the server');
      assert.ok(ds.every((d) => d.reason === 'store-unavailable'));
      assert.equal(store.batcher!.stats.checks - before, 10 * MAX_BATCH, 'the checks sent: maxPending parts of 64');
      assert.ok(store.pending <= 10);
    } finally {
      suite.server.resume();
    }
    for (let i = 0; i < 100 && store.pending > 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(store.pending, 0);
    assert.equal(1e9 - (await bound.evaluate('hot', 0, undefined)).remaining, 0, 'the parts that ran after their deadline changed nothing');
    store.close();
  });
});
