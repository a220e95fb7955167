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
import { Redis as IORedis } from 'ioredis';
import { uniquePrefix, useCluster, useNodeRedis, useRedis, type NodeRedis } from '../support/redis-suite.js';

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
  // a shared id (gcra keeps its interval beside its TAT: the adopt path), dry-run (refusals admitted, state charged),
  // a sliding log beside a strict bucket (the log's ranges per check, no kcall)
  sharedId: () => new Policy({ id: 'batch-shared', rules: [rules.gcra({ limit: 4, per: 1_000, burst: 2 }), rules.tokenBucket({ limit: 6, per: 2_000 })] }),
  dryRun: () => new Policy({ dryRun: true, rules: [rules.slidingWindow({ limit: 3, per: 1_000 }), rules.leakyBucket({ limit: 4, per: 1_000 })] }),
  logAndBucket: () => new Policy({ rules: [rules.slidingLog({ limit: 4, per: 1_000, name: 'log' }), rules.tokenBucket({ limit: 6, per: 2_000, name: 'b', accounting: 'strict' })] }),
};

/** Step — one check: its time offset from the previous one (ms; explicit now) and its cost. */
const step = fc.record({
  dt: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400 }), fc.double({ min: 0, max: 50, noNaN: true })),
  cost: fc.oneof(fc.constant(1), fc.constant(0), fc.constantFrom(0.5, 2, 2.5, 7), fc.integer({ min: 0, max: 4 })),
});

const strip = (d: Decision): unknown => JSON.parse(JSON.stringify(d));

/**
 * Tick — the checks of one tick, and before them maybe a block or exemption of `for` ms set on the client (at least
 * 1 s: the key also expires on the server's real clock when the override ends, and a run takes well under a second;
 * at most 20 s, so that the checks' own times, up to 12 s a tick, also see it end).
 */
const tick = fc.record({
  steps: fc.array(step, { minLength: 1, maxLength: 30 }),
  override: fc.option(fc.record({
    kind: fc.constantFrom('block' as const, 'exempt' as const), for: fc.integer({ min: 1_000, max: 20_000 }),
    // any bytes: a reply with a reason is longer than a plain one by its length, read from the batch's reply
    reason: fc.option(fc.string({ unit: 'binary', maxLength: 12 }), { nil: undefined }),
  }), { freq: 4 }),
});

function conformance(suite: { client: Redis | Cluster }, where: string): void {
  for (const [name, make] of Object.entries(POLICIES)) {
    test(`${where} ${name}: a batch decides and stores exactly as the same checks one by one`, async () => {
      const batched = new RedisStore({ client: suite.client, prefix: uniquePrefix('batch'), timeout: 10_000 });
      const single = new RedisStore({ client: suite.client, prefix: uniquePrefix('single'), timeout: 10_000, batch: false });
      const policy = make();
      const a = batched.attach(policy) as RedisBound;
      const b = single.attach(policy) as RedisBound;
      const stored = async (bound: RedisBound, key: string): Promise<[string | null, boolean]> => {
        const k = bound.redisKey(key);
        const [value, expiry] = await Promise.all([suite.client.getBuffer(k), suite.client.pexpiretime(k)]);
        // an override's header holds two ends on the server's real clock (lua/record.lua: the override's and the
        // state's expiry), which differ between two clients set a few ms apart: compared without them
        if (value !== null && value[0] === 0x6f) value.fill(0, 10, 26);
        return [value === null ? null : value.toString('hex'), expiry >= 0];
      };
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(tick, { minLength: 1, maxLength: 4 }), async (ticks) => {
          const key = `k${run++}:\u00e9{x}%\u0000`;
          let now = T0;
          for (const { steps, override } of ticks) {
            if (override !== null) {
              // set on both clients at the tick's start: the batch's reads and writes of a value with a header
              const request = { kind: override.kind, for: override.for, ...(override.reason === undefined ? {} : { reason: override.reason }) };
              await Promise.all([a.setOverride(key, request, now), b.setOverride(key, request, now)]);
            }
            const times = steps.map((s) => (now += s.dt));
            // all of one tick at once: one batch; the reference awaits each check before sending the next
            const got = await Promise.all(steps.map((s, i) => a.evaluate(key, s.cost, times[i])));
            const want: Decision[] = [];
            for (let i = 0; i < steps.length; i++) want.push(await b.evaluate(key, steps[i].cost, times[i]));
            assert.deepEqual(got.map(strip), want.map(strip));
            // the value a batch leaves (written once at its end) is the one the checks one by one leave, expiry or not
            assert.deepEqual(await stored(a, key), await stored(b, key));
          }
        }),
        { numRuns: 25, verbose: process.env.DBG ? 2 : 0 },
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

  test('a batch of looks after an override ended keeps the value\'s expiry as one by one does (SET … KEEPTTL written last)', async () => {
    const batched = new RedisStore({ client: suite.client, prefix: uniquePrefix('keep'), timeout: 10_000 });
    const single = new RedisStore({ client: suite.client, prefix: uniquePrefix('keep1'), timeout: 10_000, batch: false });
    const policy = new Policy({ rules: [rules.gcra({ limit: 5, per: 1_000, burst: 2, name: 'g' }), rules.fixedWindow({ limit: 9, per: 60_000, name: 'w' })] });
    const a = batched.attach(policy) as RedisBound;
    const b = single.attach(policy) as RedisBound;
    for (const bound of [a, b]) {
      await bound.evaluate('c', 1, T0);
      await bound.setOverride('c', { kind: 'block', for: 30_000, reason: 'r' }, T0);
    }
    // the block is over at T0 + 40 s: three looks in one batch, and the same one by one
    await Promise.all([0, 1, 2].map((i) => a.evaluate('c', 0, T0 + 40_000 + i)));
    for (const i of [0, 1, 2]) await b.evaluate('c', 0, T0 + 40_000 + i);
    const ttl = async (bound: RedisBound): Promise<[string, boolean]> => [
      (await suite.client.getBuffer(bound.redisKey('c')))!.toString('hex'), (await suite.client.pexpiretime(bound.redisKey('c'))) >= 0,
    ];
    const [va, vb] = [await ttl(a), await ttl(b)];
    assert.deepEqual(va, vb);
    assert.equal(va[1], true, 'the value keeps an expiry');
    batched.close();
    single.close();
  });

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

  test('the server clock, gcra stored compact (PXAT, read back inside the batch): each check sees the last one\'s charge', async () => {
    const T = 360_000; // 10/h: the interval, ms
    const policy = new Policy({ rules: [rules.gcra({ limit: 10, per: '1h', burst: 10 })] });
    const store = new RedisStore({ client: suite.client, prefix: uniquePrefix('compact'), timeout: 10_000 });
    const a = store.attach(policy) as RedisBound;
    const ds = await Promise.all(Array.from({ length: 30 }, () => a.evaluate('c', 1, undefined)));
    // one TIME for the batch: the i-th admitted check's TAT is now + (i + 1)·T, exactly; then every refusal waits T
    assert.deepEqual(ds.map((d) => d.allowed), ds.map((_, i) => i < 10));
    assert.deepEqual(ds.map((d) => d.resetAfter), ds.map((_, i) => Math.min(i + 1, 10) * T));
    assert.deepEqual(ds.map((d) => d.remaining), ds.map((_, i) => Math.max(9 - i, 0)));
    assert.deepEqual(ds.filter((d) => !d.allowed).map((d) => d.retryAfter), Array(20).fill(T));
    assert.match(String(await suite.client.get(a.redisKey('c'))), /^\d+$/, 'the compact form (a small integer and PXAT)');
    // what the batch wrote is what a check one by one reads (the same key, batching off)
    const single = new RedisStore({ client: suite.client, prefix: store.prefix, timeout: 10_000, batch: false });
    const next = await (single.attach(policy) as RedisBound).evaluate('c', 1, undefined);
    assert.equal(next.allowed, false);
    assert.ok(next.resetAfter <= 10 * T && next.resetAfter > 10 * T - 5_000, `resetAfter ${next.resetAfter}`);
    const again = await Promise.all([a.evaluate('c', 0, undefined), a.evaluate('c', 0, undefined)]);
    assert.equal(again[0].resetAfter, again[1].resetAfter);
    assert.ok(again[0].resetAfter <= next.resetAfter && again[0].resetAfter > 10 * T - 5_000);
    store.close();
    single.close();
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
    // the batch reached the stopped server and ran after its deadline (LATE): not charged. (The look before the pause
    // taught the store the server's clock, explicit now or not: deadlines are written on it.)
    const look = await bound.evaluate('s', 0, T0);
    assert.equal(look.remaining, 100);
    store.close();
  });
});

/** sameOnClient — 40 checks of one key in one tick (mixed costs and times, a block ending among them) on `client` decide as one by one. */
async function sameOnClient(client: Redis | NodeRedis): Promise<void> {
  const policy = POLICIES.twoRules();
  const batched = new RedisStore({ client, prefix: uniquePrefix('via'), timeout: 10_000 });
  const single = new RedisStore({ client, prefix: uniquePrefix('via1'), timeout: 10_000, batch: false });
  const a = batched.attach(policy) as RedisBound;
  const b = single.attach(policy) as RedisBound;
  for (const x of [a, b]) await x.setOverride('v', { kind: 'block', for: 10_000, reason: 'r\u00e9' }, T0);
  const steps = Array.from({ length: 40 }, (_, i) => ({ now: T0 + 9_000 + 100 * Math.floor(i / 3), cost: [1, 1, 0, 2, 0.5][i % 5] }));
  const got = await Promise.all(steps.map((s) => a.evaluate('v', s.cost, s.now)));
  const want: Decision[] = [];
  for (const s of steps) want.push(await b.evaluate('v', s.cost, s.now));
  assert.deepEqual(got.map(strip), want.map(strip));
  assert.ok(got.some((d) => d.reason === 'blocked') && got.some((d) => d.reason === 'limited'));
  assert.equal(batched.batcher!.stats.checks, 40);
  batched.close();
  single.close();
}

describe('other clients', () => {
  const suite = useRedis();
  test('ioredis with enableAutoPipelining: a batch decides as one by one', async () => {
    const client = new IORedis({ host: '127.0.0.1', port: suite.server.port, enableAutoPipelining: true });
    try {
      await sameOnClient(client);
    } finally {
      client.disconnect();
    }
  });
});

describe('node-redis', () => {
  const suite = useNodeRedis();
  test('node-redis: a batch decides as one by one', async () => {
    await sameOnClient(suite.client);
  });
});

describe('cluster', () => {
  const suite = useCluster();
  conformance(suite, 'cluster');
});
