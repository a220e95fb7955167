/**
 * The sliding log in the local-first mode (docs/fleet.md, "Per algorithm"): one instance decides check by check as
 * the memory store does, over logs longer than the part the sync script reads at once (its entries written in place)
 * and with several rules over one log beside a token bucket; Redis's log is then the memory store's (an exact look at
 * later times, as entries leave the windows, sees what the memory store sees); a log longer than the sync returns
 * whole is copied merged (the entries near each window's edge one by one) and still decides as the memory store, one
 * rule or two over it, and is decided by the exact mode while its edge crosses too many entries; a block's header is
 * dropped by a charge made after its end; the sync's ARGV and the copies' logs stay within their bounds.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RedisServer } from '../support/redis.js';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import { redisStore, type RedisBound } from '../../src/stores/redis/index.js';
import { LOG_COPY } from '../../src/stores/redis/localFirst/script.js';

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

let n = 0;
const fresh = (): string => `lfl:${n++}:`;
const BASE = 480_000 * 3_600_000 + 1_000;

/** seeded — a small deterministic generator (the runs are repeatable). */
function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x * 1_103_515_245 + 12_345) >>> 0;
    return x / 2 ** 32;
  };
}

/** same — the parts of two decisions the stores must agree on. */
function same(a: { allowed: boolean; remaining: number; retryAfter: number; resetAfter: number }, b: typeof a, what: string): void {
  assert.deepEqual([a.allowed, a.remaining, a.retryAfter, a.resetAfter], [b.allowed, b.remaining, b.retryAfter, b.resetAfter], what);
}

describe('one instance decides as the memory store', () => {
  for (const accounting of ['leaky', 'strict'] as const) {
    test(`two slidingLog rules over one log beside a token bucket (${accounting}): 600 checks, logs past the 64 entries read at once; Redis's log is then the memory store's`, async () => {
      const make = (): RuleConfig[] => [
        rules.slidingLog({ limit: 150, per: '1m', accounting, name: 'minute' }),
        rules.slidingLog({ limit: 400, per: '1h', accounting, name: 'hour' }),
        rules.tokenBucket({ limit: 1000, per: '1h', accounting, name: 'bucket' }),
      ];
      const prefix = fresh();
      const store = redisStore({ client, prefix, localFirst: { maxUnsynced: 7, flushEvery: '60s' } });
      const lim = limiter({ rules: make(), store });
      const mem = limiter({ rules: make() });
      const rnd = seeded(accounting === 'leaky' ? 7 : 11);
      let t = BASE;
      for (let i = 0; i < 600; i++) {
        t += 1 + Math.floor(rnd() * 250);
        const cost = rnd() < 0.2 ? 2 : 1;
        same(await lim.check('k', { now: t, cost }), await mem.check('k', { now: t, cost }), `check ${i} at +${t - BASE}`);
        if (rnd() < 0.05) await store.flush();
      }
      await store.close();
      // Redis's state, read by the exact mode, as the entries leave the windows
      const exact = limiter({ rules: make(), store: redisStore({ client, prefix }) });
      for (let k = 0; k < 40; k++) {
        const at = t + k * 5_000;
        const [a, b] = [await exact.peek('k', { now: at }), await mem.peek('k', { now: at })];
        assert.deepEqual(a.rules.map((r) => [r.remaining, r.retryAfter, r.resetAfter]), b.rules.map((r) => [r.remaining, r.retryAfter, r.resetAfter]), `a look at +${at - t}`);
      }
    });
  }

  test(`a log longer than ${LOG_COPY} entries is copied merged (only the entries near a window's edge one by one), decided exactly while those are too many, and the same as the memory store throughout`, async () => {
    const make = (): RuleConfig[] => [rules.slidingLog({ limit: 5000, per: '1h' })];
    const store = redisStore({ client, prefix: fresh(), localFirst: { maxUnsynced: 10, flushEvery: '30ms' } });
    const lim = limiter({ rules: make(), store });
    const mem = limiter({ rules: make() });
    const exact = (): number => store.localFirstStats()?.exact ?? 0;
    // 1 100 entries within 11 ms: past 1 024 the sync returns the log merged (no edge of the hour's window is near)
    for (let i = 0; i < LOG_COPY + 76; i++) {
      const t = BASE + i / 100;
      same(await lim.check('k', { now: t }), await mem.check('k', { now: t }), `check ${i}`);
    }
    await store.flush();
    assert.equal(exact(), 0, 'every check decided on the copy');
    assert.ok(store.localFirstStats()!.logEntries <= 64, `the copy's log has room for ${store.localFirstStats()!.logEntries} entries`);
    // an hour later the window's edge crosses those entries: more than 1 024 of them near it, so the sync returns none
    // and the checks are the exact mode's until the exact checks have trimmed the log (then a fetch copies it again)
    await sleep(40);
    for (let i = 0; i < 150; i++) {
      const t = BASE + 3_600_000 + i / 10;
      same(await lim.check('k', { now: t }), await mem.check('k', { now: t }), `an hour later, check ${i}`);
    }
    assert.ok(exact() >= 1, 'decided by the exact mode while the edge crossed the long log');
    await sleep(40);
    const before = exact();
    for (let i = 0; i < 50; i++) {
      const t = BASE + 3_600_000 + 20 + i;
      same(await lim.check('k', { now: t }), await mem.check('k', { now: t }), `after, check ${i}`);
    }
    assert.ok(exact() - before <= 1, 'copied again: decided locally');
    await store.close();
  });
  test('two rules over one long log (1 minute and 1 hour): as the minute\'s edge crosses the log, the entries near it come one by one and every decision is the memory store\'s', async () => {
    const make = (): RuleConfig[] => [rules.slidingLog({ limit: 3000, per: '1m', name: 'minute' }), rules.slidingLog({ limit: 5000, per: '1h', name: 'hour' })];
    const store = redisStore({ client, prefix: fresh(), localFirst: { maxUnsynced: 10, flushEvery: '30ms' } });
    const lim = limiter({ rules: make(), store });
    const mem = limiter({ rules: make() });
    const look = (d: { rules: { remaining: number; retryAfter: number; resetAfter: number }[] }): number[][] => d.rules.map((r) => [r.remaining, r.resetAfter]);
    for (let i = 0; i < 1100; i++) {
      const t = BASE + i;
      const [a, b] = [await lim.check('k', { now: t }), await mem.check('k', { now: t })];
      same(a, b, `check ${i}`);
      assert.deepEqual(look(a), look(b), `check ${i}'s rules`);
    }
    // a minute later: the minute's window loses the first entries one by one, the hour's keeps them all
    for (let j = 0; j < 300; j++) {
      const t = BASE + 60_000 + j;
      const [a, b] = [await lim.check('k', { now: t }), await mem.check('k', { now: t })];
      same(a, b, `a minute later, check ${j}`);
      assert.deepEqual(look(a), look(b), `a minute later, check ${j}'s rules`);
    }
    assert.equal(store.localFirstStats()?.exact, 0, 'every check decided on the copy');
    assert.ok(store.localFirstStats()!.logEntries <= 256, `the copy's log has room for ${store.localFirstStats()!.logEntries} entries`);
    await store.close();
  });
});

describe('blocks', () => {
  test('a block set by another instance: charges made under it are dropped, one made after its end drops its header (a long log, rewritten whole)', async () => {
    const prefix = fresh();
    const make = (): RuleConfig[] => [rules.slidingLog({ limit: 500, per: '1h' })];
    const a = redisStore({ client, prefix, localFirst: { maxUnsynced: 5, flushEvery: '60s' } });
    const la = limiter({ rules: make(), store: a });
    const exact = limiter({ rules: make(), store: redisStore({ client, prefix }) });
    // explicit times near the server's clock (a block's end is on it), 10 ms apart: a log of 100 entries
    let t = Date.now() - 5_000;
    for (let i = 0; i < 100; i++) assert.equal((await la.check('k', { now: (t += 10) })).allowed, true);
    await a.flush();
    // another instance blocks the client for 2 s (with a reason: the value's head is longer)
    await exact.block('k', { for: 2_000, reason: 'a reason long enough to push the log past the head read at once' });
    const blockEnd = Date.now() + 2_000;
    t = Date.now();
    // this instance learns it at its next sync: until then it decides on its copy (its charges under the block are dropped)
    for (let i = 0; i < 3; i++) await la.check('k', { now: (t += 10) });
    await a.flush();
    const blocked = await la.check('k', { now: (t += 10) });
    assert.equal(blocked.reason, 'blocked');
    assert.equal(blocked.blockReason, 'a reason long enough to push the log past the head read at once');
    // after its end: decided locally, filed in Redis's log, and the header is gone from the value
    t = blockEnd + 100;
    for (let i = 0; i < 4; i++) assert.equal((await la.check('k', { now: (t += 10) })).allowed, true);
    await a.flush();
    const v = await client.getBuffer((a.attach(la.policy) as RedisBound).redisKey('k'));
    assert.equal(v?.[0], 'n'.charCodeAt(0), 'the value has no override header');
    // 100 before, 4 after; the 3 made under the block were dropped
    assert.equal((await exact.peek('k', { now: t })).remaining, 500 - 104);
    await a.close();
  });
});

describe('bounds', () => {
  test('a sync call carries at most 4 096 charges, a flush at most 512: 20 clients × 500 charges of 0.001 go in 3 calls, one client\'s 2 000 in 4 flushes', async () => {
    const store = redisStore({ client, prefix: fresh(), localFirst: { maxUnsynced: 5, flushEvery: '60s' } });
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1h' })], store });
    for (let c = 0; c < 20; c++) for (let i = 0; i < 500; i++) assert.equal((await lim.check(`c${c}`, { now: BASE + i, cost: 0.001 })).allowed, true);
    const calls = (): number => store.localFirstStats()!.calls;
    const before = calls();
    await store.flush();
    assert.equal(calls() - before, 3, 'three calls of 8, 8 and 4 clients');
    const one = calls();
    for (let i = 0; i < 2000; i++) await lim.check('one', { now: BASE + i, cost: 0.001 });
    await store.flush();
    // its first check fetched the client (one call), then every 512 charges a flush, the last 464 by flush()
    assert.equal(calls() - one, 5);
    const exact = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1h' })], store: redisStore({ client, prefix: store.prefix }) });
    for (const k of ['c0', 'c19', 'one']) assert.equal((await exact.peek(k, { now: BASE + 2000 })).remaining, k === 'one' ? 8 : 9);
    await store.close();
  });

  test('maxLogEntries bounds the entries the copies\' logs hold together: 60 clients of 40 entries each under 600', async () => {
    const make = (): RuleConfig[] => [rules.slidingLog({ limit: 100, per: '1h' })];
    const store = redisStore({ client, prefix: fresh(), localFirst: { maxUnsynced: 5, flushEvery: '60s', maxLogEntries: 600 } });
    const lim = limiter({ rules: make(), store });
    const mem = limiter({ rules: make() });
    let most = 0;
    for (let c = 0; c < 60; c++) {
      for (let i = 0; i < 40; i++) {
        const now = BASE + c * 100 + i;
        same(await lim.check(`c${c}`, { now }), await mem.check(`c${c}`, { now }), `c${c} #${i}`);
        most = Math.max(most, store.localFirstStats()!.logEntries);
      }
    }
    // a copy is made only under the budget; the one made then grows by its own charges (64 entries of room) until synced
    assert.ok(most <= 600 + 64, `${most} entries of room at most`);
    assert.ok(store.localFirstStats()!.copies < 60);
    await store.close();
  });
});
