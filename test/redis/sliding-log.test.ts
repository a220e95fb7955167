/**
 * The sliding log on Redis at any length: the same decisions as the memory store for long logs (read in place,
 * appended in place, trimmed by an offset, rebuilt when full; several windows over one log), and a check on a long
 * log reads and writes a few entries, not the log: no GET or SET of the value in the steady state, and as many
 * commands per check at 20 000 entries as at 200.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import { Policy } from '../../src/core/policy.js';
import { rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import type { Decision } from '../../src/core/types.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
import { uniquePrefix, useRedis } from '../support/redis-suite.js';
import { same } from '../conformance/run.js';

const redis = useRedis();
const T0 = 1_800_000_000_000.5;

type Op = { op: 'check'; dt: number; cost: number } | { op: 'refund'; cost: number } | { op: 'block'; reason: string | undefined; for: number } | { op: 'unblock' } | { op: 'reset' } | { op: 'pause'; ms: number };

describe('long logs decide as the memory store', () => {
  const ruleSets: fc.Arbitrary<RuleConfig[]> = fc.oneof(
    fc.constant<RuleConfig[]>([rules.slidingLog({ limit: 150, per: 2_000 })]),
    fc.constant<RuleConfig[]>([rules.slidingLog({ limit: 300, per: 5_000, accounting: 'strict' })]),
    // several windows over one log: the short ones gallop from the newest entry
    fc.constant<RuleConfig[]>([rules.slidingLog({ limit: 10, per: 50 }), rules.slidingLog({ limit: 120, per: 1_000 }), rules.slidingLog({ limit: 400, per: 8_000 })]),
    fc.constant<RuleConfig[]>([rules.gcra({ limit: 1000, per: 1_000 }), rules.slidingLog({ limit: 5, per: 20, accounting: 'strict' }), rules.slidingLog({ limit: 200, per: 3_000, accounting: 'strict' })]),
  );
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 60, arbitrary: fc.record({ op: fc.constant('check' as const), dt: fc.oneof({ weight: 10, arbitrary: fc.constant(0) }, { weight: 10, arbitrary: fc.integer({ min: 1, max: 12 }) }, { weight: 10, arbitrary: fc.constant(-3) }, { weight: 10, arbitrary: fc.constant(400) }, { weight: 1, arbitrary: fc.constant(60_000) }), cost: fc.constantFrom(1, 1, 1, 0, 0.5, 4) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('block' as const), reason: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }), for: fc.integer({ min: 30_000, max: 90_000 }) }) },
    { weight: 1, arbitrary: fc.constant({ op: 'unblock' as const }) },
    { weight: 1, arbitrary: fc.constant({ op: 'reset' as const }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('refund' as const), cost: fc.constantFrom(1, 2.5, 30) }) },
    // real time passing while the test's clock does not (Redis expires keys in real time: see replay)
    { weight: 1, arbitrary: fc.record({ op: fc.constant('pause' as const), ms: fc.integer({ min: 1, max: 15 }) }) },
  );

  // (A block ends on the check's clock, `now` here, but its key expires on the server's: a block must outlast the
  // run in real time, or Redis forgets it while the memory store, at an earlier `now`, still holds it. So blocks
  // last 30–90 s, and a rare step of 60 s ends them on the check's clock.)
  test('property: every decision equal, step by step', async () => {
    await fc.assert(
      fc.asyncProperty(ruleSets, fc.array(op, { minLength: 200, maxLength: 900 }), async (list: RuleConfig[], ops) => replay(list, ops)),
      { numRuns: 12 },
    );
  });

  // The flake this harness once had (1 run in 5, never with its seed): a refund can leave a state a few ms from
  // fresh, which the script stores with `PX` of those few ms on the server's clock; the test's clock, which does not
  // step back after a refund, often stands still for the next checks while real time runs on, so Redis forgot the
  // state while the memory store, at the same `now`, still counted it. replay() now moves its clock to where such a
  // state ends once real time has passed its expiry. Both rows failed before (remaining 149 vs 148).
  for (const [name, ops] of [
    ['a refund leaves 5 ms of state, 20 ms of real time pass', [{ op: 'check', dt: 0, cost: 1 }, { op: 'check', dt: 1995, cost: 1 }, { op: 'refund', cost: 1 }, { op: 'pause', ms: 20 }, { op: 'check', dt: 0, cost: 0.5 }]],
    ['… and a refused look in between keeps the expiry', [{ op: 'check', dt: 0, cost: 1 }, { op: 'check', dt: 1990, cost: 1 }, { op: 'refund', cost: 1 }, { op: 'check', dt: 0, cost: 0 }, { op: 'pause', ms: 25 }, { op: 'check', dt: 1, cost: 1 }]],
  ] as [string, Op[]][]) {
    test(`real time past a short expiry: ${name}`, () => replay([rules.slidingLog({ limit: 150, per: 2_000 })], ops));
  }

  // The flake CI met next (seed 2144149317, remaining 996 vs 994): a refused check on a strict rule is charged and
  // sets the key's expiry from its own real time; replay() kept the earlier admitted check's expiry, so it moved its
  // clock to where that one's state ended while the refused charge still held the memory store's state and Redis had
  // forgotten it. Failed before (remaining 4 vs 3).
  test('real time past a short expiry: a refused strict charge sets the expiry', () =>
    replay([rules.slidingLog({ limit: 5, per: 20, accounting: 'strict' })], [
      ...Array.from({ length: 5 }, () => ({ op: 'check' as const, dt: 0, cost: 1 })),
      { op: 'check', dt: 15, cost: 1 },
      { op: 'pause', ms: 40 },
      { op: 'check', dt: 0, cost: 1 },
    ]));
});

/**
 * replay — `ops` on the memory store and on Redis, every decision compared. The checks carry the test's clock (`t`),
 * but Redis expires a key on its own clock, in real time: after an op that set the key's expiry (a refund, a check
 * that charged), `expiry` keeps the earliest real time (performance.now() ms) Redis may drop the key and the test's
 * time at which the state has become a fresh client's; a later check that comes after that real time but before that
 * test time is moved to it (the state is gone from both), so a test clock slower than real time is not a difference.
 */
async function replay(list: RuleConfig[], ops: Op[]): Promise<void> {
  const policy = new Policy({ rules: list });
  const mem = new MemoryStore().attach(policy);
  const red = new RedisStore({ client: redis.client, prefix: uniquePrefix('log'), timeout: 5_000 }).attach(policy) as RedisBound;
  let t = T0;
  let refunded = false;
  let expiry: { real: number; t: number } | undefined;
  /** fresh — the time until the state is a fresh client's (the script's `fresh`: the longest resetAfter), ms. */
  const fresh = (d: Decision): number => Math.max(0, ...d.rules.map((r) => r.resetAfter));
  for (const [i, o] of ops.entries()) {
    if (o.op === 'check') {
      // (after a refund the clock does not step back: a state refunded to fresh is deleted on Redis and kept
      // at `now` by the memory store, which differ for a check before that `now` — a known difference of refunds)
      t += refunded ? Math.max(0, o.dt) : o.dt;
      if (o.cost > 0) refunded = false;
      if (expiry !== undefined && performance.now() >= expiry.real && t < expiry.t) t = expiry.t;
      const sent = performance.now();
      const d = mem.evaluate('k', o.cost, t);
      same(await red.evaluate('k', o.cost, t), d, `step ${i} (t=${t - T0} cost=${o.cost})`);
      // charged (admitted, no override in force): the expiry is set anew. A refused check may or may not have been
      // charged (strict rules): if it was, Redis's key now expires at the refused check's real time + its fresh,
      // which can come before the earlier expiry's real time (the test's clock ran ahead of real time between the
      // two) while the state ends later on the test's clock — so both are kept at their safest: the earliest real
      // time, the latest test time (moving the clock to where the state has ended in both stores is always safe)
      if (o.cost > 0 && d.reason === 'allowed') expiry = { real: sent + fresh(d), t: t + fresh(d) };
      else if (o.cost > 0 && d.reason === 'limited') {
        const next = { real: sent + fresh(d), t: t + fresh(d) };
        expiry = expiry === undefined ? next : { real: Math.min(expiry.real, next.real), t: Math.max(expiry.t, next.t) };
      }
    } else if (o.op === 'refund') {
      refunded = true;
      const sent = performance.now();
      const d = mem.refund('k', o.cost, t, false);
      same(await red.refund('k', o.cost, t, false), d, `step ${i} (refund ${o.cost} at t=${t - T0})`);
      expiry = { real: sent + fresh(d), t: t + fresh(d) };
    } else if (o.op === 'block') {
      await red.setOverride('k', { kind: 'block', for: o.for, reason: o.reason }, t);
      mem.setOverride('k', { kind: 'block', for: o.for, reason: o.reason }, t);
    } else if (o.op === 'unblock') {
      await red.clearOverride('k', 'block');
      mem.clearOverride('k', 'block');
    } else if (o.op === 'pause') {
      await sleep(o.ms);
    } else {
      await red.reset('k');
      mem.reset('k');
      expiry = undefined;
    }
  }
  (red.store as RedisStore).close();
}

describe('a block over a log that fills the head', () => {
  // A block's header comes before the state, so the head the script reads first holds fewer entries than without
  // one; an entry just past it must still be read (it was taken for one in a chunk never read: the script failed and
  // the check answered by the failure policy — under 'allow', a blocked client admitted).
  for (const entries of [62, 63, 64, 65, 66]) {
    test(`${entries} entries, a block without a reason, a short window searched from the newest`, async () => {
      const policy = new Policy({ rules: [rules.slidingLog({ limit: 1000, per: 1_000 }), rules.slidingLog({ limit: 10_000, per: 60_000 })] });
      const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('loghead'), timeout: 5_000, onError: 'allow' });
      const red = store.attach(policy) as RedisBound;
      const mem = new MemoryStore().attach(policy);
      for (let i = 0; i < entries; i++) same(await red.evaluate('k', 1, T0 + 2 * i), mem.evaluate('k', 1, T0 + 2 * i), `filing ${i}`);
      const at = T0 + 2 * entries;
      await red.setOverride('k', { kind: 'block', for: 60_000 }, at);
      mem.setOverride('k', { kind: 'block', for: 60_000 }, at);
      for (const dt of [0, 1, 500, 999]) {
        const d = await red.evaluate('k', 1, at + dt);
        assert.equal(d.allowed, false, `admitted ${dt} ms after the block: ${JSON.stringify(d)}`);
        same(d, mem.evaluate('k', 1, at + dt), `${dt} ms after the block`);
      }
      store.close();
    });
  }
});

describe('a check on a long log does not read or write the log', () => {
  /** perCheck — Redis commands per check, by name, over `n` checks at the steady state of a log of `entries`. */
  async function perCheck(entries: number, n = 200): Promise<Record<string, number>> {
    const lim = { rules: [rules.slidingLog({ limit: 10 * entries, per: entries })] };
    const bound = new RedisStore({ client: redis.client, prefix: uniquePrefix('loglen'), timeout: 10_000 }).attach(new Policy(lim)) as RedisBound;
    // one request per ms over a window of `entries` ms: the log holds `entries` requests
    for (let i = 0; i < entries + 50; i += 1000) {
      await Promise.all(Array.from({ length: Math.min(1000, entries + 50 - i) }, (_, j) => bound.evaluate('k', 1, T0 + i + j)));
    }
    const len = await redis.client.strlen(bound.redisKey('k'));
    assert.ok(len >= entries * 16 && len <= entries * 24 + 200, `value of ${len} bytes for ${entries} entries (<= 24 B per entry)`);
    await redis.client.config('RESETSTAT');
    for (let i = 0; i < n; i++) {
      const d = await bound.evaluate('k', 1, T0 + entries + 50 + i);
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, 10 * entries - entries);
    }
    const stats = await redis.client.info('commandstats');
    const out: Record<string, number> = {};
    for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (m[1] !== 'evalsha' && m[1] !== 'info' && m[1] !== 'config') out[m[1]] = Number(m[2]) / n;
    return out;
  }

  test('20 000 entries: no GET or SET per check (a rebuild now and then), as many commands as at 200', async () => {
    const short = await perCheck(200);
    const long = await perCheck(20_000);
    const total = (x: Record<string, number>): number => Object.values(x).reduce((a, b) => a + b, 0);
    assert.equal(long.get ?? 0, 0, `GET per check: ${JSON.stringify(long)}`);
    assert.ok((long.set ?? 0) <= 0.01, `SET (a rebuilt log) per check: ${JSON.stringify(long)}`);
    assert.ok(total(long) <= total(short) + 1, `commands per check: ${JSON.stringify(long)} at 20 000 vs ${JSON.stringify(short)} at 200`);
    assert.ok(total(long) <= 10, `commands per check: ${JSON.stringify(long)}`);
  });
});
