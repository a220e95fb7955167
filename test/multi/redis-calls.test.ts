/**
 * checkAll on a standalone Redis: one round trip per compound request (counted by the server: INFO commandstats),
 * the NOSCRIPT fallback, the failure policy (deny, allow, memory: all-or-nothing on the local store), the denial
 * cache (a cached refusal of one item answers without the store and charges nothing), items on different stores
 * (decided, then refunded), and misuse.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { limiter, checkAll, checkAllSync, rules, memoryStore } from '../../src/index.js';
import { RedisStore, type OnError } from '../../src/stores/redis/index.js';
import { uniquePrefix, useRedis } from '../support/redis-suite.js';

const redis = useRedis();
const T = 1_800_000_000_000;

/** stats — calls per command since the last CONFIG RESETSTAT. */
function stats(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of redis.server.cli('INFO', 'commandstats').matchAll(/cmdstat_(\w+):calls=(\d+)/g)) out[m[1]] = Number(m[2]);
  return out;
}

function pair(store: RedisStore, limitB = 2, denialCache = false) {
  return {
    a: limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1h' }), rules.slidingLog({ limit: 5, per: '1h', name: 'log' })], store }),
    b: limiter({ rules: [rules.gcra({ limit: limitB, per: '1h' })], store, denialCache }),
  };
}

describe('round trips', () => {
  test('one EVALSHA per compound request, admitted or refused, and nothing else', async () => {
    const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('rt') });
    const { a, b } = pair(store);
    await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }, { limiter: b, key: 'w' }], { now: T }); // loads the script (NOSCRIPT, EVAL)
    redis.server.cli('CONFIG', 'RESETSTAT');
    const results = [];
    for (let i = 1; i <= 10; i++) results.push(await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }, { limiter: b, key: 'w' }], { now: T + i }));
    const s = stats();
    assert.deepEqual(results.map((r) => r.allowed), [true, false, false, false, false, false, false, false, false, false]);
    assert.equal(s.evalsha, 10, JSON.stringify(s));
    // commandstats counts the scripts' own GET/SET/DEL too (and a sliding log's GETRANGE/SETRANGE/PEXPIRE): the client
    // sent nothing but the ten EVALSHA
    assert.deepEqual(Object.keys(s).filter((k) => !['evalsha', 'get', 'set', 'del', 'getrange', 'setrange', 'pexpire', 'persist', 'config', 'info'].includes(k)), [], JSON.stringify(s));
    assert.equal((await a.peek('u', { now: T + 20 })).remaining, 3, 'a was charged by the two admitted requests only');
  });

  test('a server that lost its scripts (SCRIPT FLUSH) answers through EVAL, once', async () => {
    const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('ns') });
    const { a, b } = pair(store);
    await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T });
    redis.server.cli('SCRIPT', 'FLUSH');
    redis.server.cli('CONFIG', 'RESETSTAT');
    const r = await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T + 1 });
    assert.equal(r.allowed, true);
    assert.equal(stats().eval, 1);
    assert.equal(store.failures, 0);
  });
});

describe('failure policy', () => {
  for (const onError of ['deny', 'allow', 'memory'] as OnError[]) {
    test(`onError '${onError}' answers every item of a compound request when Redis does not`, async () => {
      const client = new Redis({ host: '127.0.0.1', port: redis.server.port, maxRetriesPerRequest: 1 });
      const store = new RedisStore({ client, onError, prefix: uniquePrefix('f'), timeout: 200 });
      const { a, b } = pair(store, 1);
      try {
        await client.ping();
        redis.server.pause();
        const first = await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T });
        const second = await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T + 1 });
        redis.server.resume();
        if (onError === 'memory') {
          assert.ok(first.decisions.every((d) => d.fallback === true));
          assert.equal(first.allowed, true);
          assert.equal(second.allowed, false, 'the local store decides all-or-nothing too');
          assert.equal(second.refusedBy, 1);
          assert.equal(second.decisions[0].remaining, 4, 'a was not charged by the refused request, locally either');
        } else {
          for (const r of [first, second]) {
            assert.equal(r.allowed, onError === 'allow');
            assert.ok(r.decisions.every((d) => d.reason === 'store-unavailable'));
          }
        }
        assert.ok(store.failures >= 2);
      } finally {
        redis.server.resume();
        client.disconnect();
        store.close();
      }
    });
  }
});

test('a cached refusal of one item refuses the compound request without asking the store, and charges nothing', async () => {
  const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('dc') });
  const { a, b } = pair(store, 1, true);
  assert.ok(b.denialCache);
  await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T });
  const refused = await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T + 1 });
  assert.equal(refused.allowed, false);
  assert.equal(refused.cached, undefined);
  redis.server.cli('CONFIG', 'RESETSTAT');
  const hit = await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T + 2 });
  assert.equal(hit.allowed, false);
  assert.equal(hit.cached, true);
  assert.equal(hit.refusedBy, 1);
  assert.equal(hit.decisions[1].reason, 'limited');
  assert.ok(Math.abs(hit.decisions[1].retryAfter - (refused.decisions[1].retryAfter - 1)) < 1e-6);
  assert.equal(hit.decisions[0].allowed, true);
  assert.equal(stats().evalsha ?? 0, 0, 'no script ran');
  assert.equal((await a.peek('u', { now: T + 3 })).remaining, 4, 'a was charged once');
  // a refund drops the entry: the next compound request asks the store again
  await b.refund('v', { now: T + 3 });
  const after = await checkAll([{ limiter: a, key: 'u' }, { limiter: b, key: 'v' }], { now: T + 4 });
  assert.equal(after.allowed, true);
});

test('items on different stores: decided, then what the admitting ones were charged is given back', async () => {
  const redisStore = new RedisStore({ client: redis.client, prefix: uniquePrefix('mix') });
  const local = limiter({ rules: [rules.tokenBucket({ limit: 3, per: '1h' })], store: memoryStore() });
  const remote = limiter({ rules: [rules.gcra({ limit: 1, per: '1h' })], store: redisStore });
  assert.equal((await checkAll([{ limiter: local, key: 'u' }, { limiter: remote, key: 'v' }], { now: T })).allowed, true);
  for (let i = 1; i <= 3; i++) {
    const r = await checkAll([{ limiter: local, key: 'u' }, { limiter: remote, key: 'v' }], { now: T + i });
    assert.equal(r.allowed, false);
    assert.equal(r.decisions[0].allowed, true);
    assert.equal(r.decisions[0].remaining, 2, 'reported from the refunded state');
  }
  assert.equal((await local.peek('u', { now: T + 5 })).remaining, 2);
});

test('misuse is an ERR_ARGUMENT naming what is wrong', async () => {
  const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('bad') });
  const { a } = pair(store);
  const mem = limiter({ rules: '1/s' });
  await assert.rejects(checkAll([]), { code: 'ERR_ARGUMENT', message: /non-empty array/ });
  await assert.rejects(checkAll([{ limiter: {} as never, key: 'k' }]), { code: 'ERR_ARGUMENT', message: /items\[0\]\.limiter/ });
  await assert.rejects(checkAll([{ limiter: a, key: 'k', cost: -1 }]), { code: 'ERR_ARGUMENT', message: /cost/ });
  await assert.rejects(checkAll([{ limiter: a, key: '' }]), { code: 'ERR_ARGUMENT', message: /key/ });
  await assert.rejects(checkAll([{ limiter: a, key: 'k' }], { now: Number.NaN }), { code: 'ERR_ARGUMENT', message: /now/ });
  assert.throws(() => checkAllSync([{ limiter: a, key: 'k' }]), { code: 'ERR_ARGUMENT', message: /synchronous/ });
  assert.throws(() => checkAllSync([{ limiter: mem, key: 'k' }, { limiter: a, key: 'k' }]), { code: 'ERR_ARGUMENT', message: /synchronous/ });
  assert.equal(checkAllSync([{ limiter: mem, key: 'k' }]).allowed, true);
  await assert.rejects(a.refund('k', { cost: Number.POSITIVE_INFINITY }), { code: 'ERR_ARGUMENT' });
});

test('a compound of many large policies stays within Lua\'s 200 locals per function', async () => {
  const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('big') });
  const algorithms = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'] as const;
  const lims = Array.from({ length: 6 }, (_, p) => limiter({
    store,
    rules: Array.from({ length: 16 }, (_, i) => {
      const a = algorithms[(i + p) % algorithms.length];
      const o = { limit: 100 + i, per: 60_000 + p, name: `r${i}` };
      return a === 'earrrl' ? rules.earrrl({ ...o, halfLife: 10_000 }) : rules[a](o);
    }),
  }));
  const r = await checkAll(lims.map((l, i) => ({ limiter: l, key: `k${i}` })), { now: T });
  assert.equal(store.failures, 0, String(store.lastError));
  assert.equal(r.allowed, true);
  assert.equal(r.decisions.length, 6);
});

test('checkAll refuses an explicit now outside the documented range, as check does', async () => {
  const a = limiter({ rules: '5/s' });
  const b = limiter({ rules: '5/min' });
  await assert.rejects(checkAll([{ limiter: a, key: 'k' }, { limiter: b, key: 'k' }], { now: -5 }), /now/);
  await assert.rejects(checkAll([{ limiter: a, key: 'k' }, { limiter: b, key: 'k' }], { now: 1e300 }), /now/);
  await assert.rejects(checkAll([{ limiter: a, kye: 'k' } as never, { limiter: b, key: 'k' }]), /kye is not an option of checkAll items\[0\] \(did you mean `key`\?\)/);
});
