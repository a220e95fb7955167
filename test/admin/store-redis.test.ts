/**
 * test/admin/store-redis — GET /admin/store of a real service (`startService`) on a real standalone redis-server:
 * the local-first mode's figures move with traffic (unsynced units before a flush, syncs and flushed units after it),
 * the hot keys' batches are counted after a burst of checks of one key, and while Redis hangs (SIGSTOP) under
 * onError 'memory' the view says the fallback is active, since when, and N (two instances registered) — answered at
 * once, since the view asks nothing of Redis. The answers hold numbers and words of the configuration only: no
 * client key.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startService, type Running } from '../../src/server/serve.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { limiter, rules } from '../../src/index.js';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { configFile } from '../server/support.js';
import { call } from './support.js';

const CONFIG = `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1000 }
policies:
  api:
    rules: '1000/h'
    algorithm: gcra
`;
const TOKEN = 'store-view-token-0123456789';
const SECRET = 'secret-client-key';

/** check — one POST /v1/check of `key` under the policy `api`. */
async function check(r: Running, key: string): Promise<{ status: number; json: any }> {
  const res = await fetch(`http://127.0.0.1:${r.httpPort}/v1/check`, { method: 'POST', body: JSON.stringify({ policy: 'api', key }), headers: { 'content-type': 'application/json' } });
  return { status: res.status, json: await res.json() };
}

/** view — GET /admin/store with the token; the one store's entry, and the raw text (for the no-key check). */
async function view(r: Running): Promise<{ s: any; text: string; ms: number }> {
  const t0 = performance.now();
  const res = await call(r.adminUrl!, 'admin/store', { token: TOKEN });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.stores.length, 1, res.text);
  return { s: res.json.stores[0], text: res.text, ms: performance.now() - t0 };
}

async function waitUntil(what: string, ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`waited ${ms} ms for ${what}`);
    await sleep(50);
  }
}

describe('GET /admin/store on Redis', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis.stop();
  });

  it('local-first: unsynced units before the flush, syncs and flushed units after it; the bound (N−1)×maxUnsynced', async () => {
    const running = await startService({
      config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, adminToken: TOKEN, log: () => undefined,
      redis: `redis://127.0.0.1:${redis.port}`, prefix: uniquePrefix('view-lf'), onStoreError: 'memory',
      redisConnect: { maxUnsynced: 50, flushEvery: 3000, from: {} },
    });
    try {
      const before = (await view(running)).s;
      assert.equal(before.kind, 'redis');
      assert.equal(before.onError, 'memory');
      assert.deepEqual({ ...before.localFirst, latency: undefined }, {
        on: true, maxUnsynced: 50, flushEvery: 3000, cold: 'fetch', maxKeys: 100_000, bound: 0, latency: undefined,
        unsynced: 0, debt: 0, copies: 0, syncs: 0, fetches: 0, calls: 0, flushedUnits: 0, failures: 0, duplicates: 0, lost: 0, exact: 0,
      }, 'one instance: the bound is (1 − 1) × 50');
      assert.equal(before.fleet.counted, 'registry');
      assert.equal(before.fleet.instances, 1);
      // the first check of the client fetches its state (one round trip); the next four are decided on the copy
      for (let i = 0; i < 5; i++) assert.equal((await check(running, SECRET)).status, 200);
      const held = await view(running);
      assert.ok(held.s.localFirst.unsynced > 0, `unsynced before the flush: ${held.text}`);
      assert.equal(held.s.localFirst.copies, 1);
      assert.equal(held.s.localFirst.flushedUnits, 0, 'nothing flushed yet (flushEvery 3 s)');
      assert.ok(!held.text.includes(SECRET), 'no client key in the view');
      const unsynced = held.s.localFirst.unsynced;
      await waitUntil('the flush', async () => (await view(running)).s.localFirst.unsynced === 0);
      const after = (await view(running)).s.localFirst;
      assert.equal(after.flushedUnits, unsynced, 'what was unsynced is flushed');
      assert.ok(after.syncs >= 2, `the fetch and the flush answered: ${after.syncs}`);
      assert.ok(after.calls >= 2);
      assert.equal(after.latency.count, after.calls, 'one round trip timed per sync call');
      assert.ok(after.latency.max > 0 && after.latency.sum >= after.latency.max && after.latency.mean > 0);
      assert.equal(after.latency.buckets.at(-1).count, after.latency.count, 'the histogram is cumulative: its last bucket (≤ 1 s) holds every call here');
      assert.ok(after.latency.buckets.every((b: { count: number }, i: number, all: { count: number }[]) => i === 0 || b.count >= all[i - 1].count));
    } finally {
      await running.close();
    }
  });

  it('exact mode: a burst of checks of one key is counted in batches; SIGSTOP under onError memory: fallback active since then, N = 2', async () => {
    const prefix = uniquePrefix('view-fleet');
    // another instance of the fleet, registered first: the service's first heartbeat counts N = 2
    const other = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 });
    const otherStore = new RedisStore({ client: other, prefix, onError: 'memory', fleet: { expiry: 60_000 } });
    await (otherStore.fleet as { beat(): Promise<number> }).beat();
    const running = await startService({
      config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, adminToken: TOKEN, log: () => undefined,
      redis: `redis://127.0.0.1:${redis.port}`, prefix, onStoreError: 'memory', storeTimeout: 300,
    });
    try {
      await waitUntil('N = 2', async () => (await view(running)).s.fleet.instances === 2);
      const quiet = (await view(running)).s;
      assert.deepEqual(quiet.localFirst, { on: false });
      assert.deepEqual(quiet.fallback, { memory: true, active: false, since: null, failures: 0 });
      assert.equal(quiet.coalescing.on, true);
      assert.equal(quiet.coalescing.batches, 0, 'no batch before the burst');

      // a burst of 50 checks of one client through the service's native check (what POST /v1/check calls), in one
      // tick: the batcher coalesces the checks of one tick. (Requests arriving on sockets reach it one tick each, and
      // RLS requests go through the compound script: through the listeners nothing coalesces today — the report says.)
      const burst = await Promise.all(Array.from({ length: 50 }, () => running.service.check('api', SECRET, 1)));
      assert.ok(burst.every((d) => d.allowed && d.fallback !== true));
      const { s, text } = await view(running);
      assert.equal(s.coalescing.batches, 1, `one batch after the burst: ${text}`);
      assert.equal(s.coalescing.largest, 50, 'the 50 checks in one call');
      assert.equal(s.coalescing.checks, 50);
      assert.equal(s.coalescing.mean, 50);
      assert.ok(!text.includes(SECRET), 'no client key in the view');

      const t0 = Date.now();
      redis.pause();
      try {
        const d = await check(running, 'during-the-outage');
        assert.equal(d.json.fallback, true, JSON.stringify(d.json));
        const during = await view(running);
        assert.ok(during.ms < 250, `the view answers without Redis: ${during.ms.toFixed(0)} ms`);
        assert.equal(during.s.fallback.active, true, during.text);
        assert.ok(during.s.fallback.since >= t0 && during.s.fallback.since <= Date.now(), `since ${during.s.fallback.since}, paused at ${t0}`);
        assert.ok(during.s.fallback.failures >= 1);
        assert.equal(during.s.fleet.instances, 2, 'N stays the last count while Redis is away');
        // a second failure does not move `since`: the fallback has been active since the first
        await check(running, 'during-the-outage');
        assert.equal((await view(running)).s.fallback.since, during.s.fallback.since);
      } finally {
        redis.resume();
      }
      await waitUntil('Redis deciding again', async () => (await check(running, 'after')).json.fallback !== true);
      const back = (await view(running)).s.fallback;
      assert.equal(back.active, false);
      assert.equal(back.since, null);
    } finally {
      await running.close();
      await otherStore.close();
      other.disconnect();
    }
  });

  it('local-first under onError memory: after an outage, the syncs answered again end the fallback', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 });
    const store = new RedisStore({ client, prefix: uniquePrefix('view-lf-back'), onError: 'memory', timeout: 300, localFirst: { maxUnsynced: 5, flushEvery: '50ms' } });
    const lim = limiter({ rules: [rules.gcra({ limit: 1000, per: '1h' })], store });
    const { serve } = await import('./support.js');
    const admin = await serve({ limiters: { lim }, token: TOKEN });
    const fallback = async (): Promise<{ active: boolean; since: number | null }> => (await call(admin.url, 'admin/store', { token: TOKEN })).json.stores[0].fallback;
    try {
      await lim.check('warm');
      redis.pause();
      try {
        assert.equal((await lim.check('cold-during')).fallback, true);
        assert.equal((await fallback()).active, true);
      } finally {
        redis.resume();
      }
      const synced = store.localFirstStats()!.flushes;
      await waitUntil('syncs answered again', async () => {
        await lim.check('after');
        return store.localFirstStats()!.flushes > synced + 2;
      });
      assert.deepEqual(await fallback(), { active: false, since: null, failures: store.failures, memory: true });
    } finally {
      await admin.close();
      await store.close();
      client.disconnect();
    }
  });

  it('a library limiter on a Redis store without a fleet: N is not counted, the bound is null; ?limiter= picks', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 });
    const store = new RedisStore({ client, prefix: uniquePrefix('view-lib'), batch: false, localFirst: { maxUnsynced: 5, flushEvery: '50ms', cold: 'fresh' } });
    const { serve } = await import('./support.js');
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1m' })], store });
    const mem = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1m' })] });
    const admin = await serve({ limiters: { lim, mem }, token: TOKEN });
    try {
      const all = await call(admin.url, 'admin/store', { token: TOKEN });
      assert.deepEqual(all.json.stores.map((x: { kind: string }) => x.kind), ['redis', 'memory']);
      const one = await call(admin.url, 'admin/store?limiter=lim', { token: TOKEN });
      const s = one.json.stores[0];
      assert.equal(one.json.stores.length, 1);
      assert.deepEqual(s.coalescing, { on: false });
      assert.deepEqual(s.fleet, { counted: 'none', instances: 1 });
      assert.equal(s.onError, 'deny');
      assert.equal(s.fallback.memory, false);
      assert.equal(s.localFirst.cold, 'fresh');
      assert.equal(s.localFirst.bound, null);
      const bad = await call(admin.url, 'admin/store?limiter=nope', { token: TOKEN });
      assert.equal(bad.status, 400);
      assert.equal(bad.json.field, 'limiter');
    } finally {
      await admin.close();
      await store.close();
      client.disconnect();
    }
  });
});
