/**
 * test/http/adapters-redis — every scenario of scenarios.ts on every adapter with the Redis store (a real
 * redis-server on a loopback port, and a 3-master Redis Cluster), and the store's failure policy seen through HTTP: Redis killed mid-run.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { limiter, rules } from '../../src/index.js';
import { redisStore } from '../../src/stores/redis/index.js';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix, useCluster, useRedis } from '../support/redis-suite.js';
import { ADAPTERS, buildExpress, request } from './apps.js';
import { ManualClock, items, scenarios } from './scenarios.js';

const prefix = (): string => uniquePrefix('http');

describe('http on a standalone Redis', () => {
  const redis = useRedis();
  for (const [name, build] of ADAPTERS) scenarios(`${name} (redis store)`, build, () => redisStore({ client: redis.client, prefix: prefix(), timeout: 5000 }));
});

describe('http on a 3-master Redis Cluster', () => {
  const cluster = useCluster();
  for (const [name, build] of ADAPTERS) scenarios(`${name} (redis cluster store)`, build, () => redisStore({ client: cluster.client, prefix: prefix(), timeout: 5000 }));
});

describe('shaping on a Redis shared by two servers (two processes\' worth of middleware)', () => {
  const redis = useRedis();
  it('no request is ever held longer than the bound, whichever server it reached', async () => {
    const clock = new ManualClock();
    const lim = limiter({ rules: [rules.leakyBucket({ limit: 20, per: '1s', burst: 10, name: 'smooth' })], store: redisStore({ client: redis.client, prefix: prefix() }) });
    const options = () => ({ limiter: lim, clock, shaping: { maxDelay: 120 } });
    const a = await buildExpress([{ method: 'GET', path: '/', limit: options }]);
    const b = await buildExpress([{ method: 'GET', path: '/', limit: options }]);
    try {
      const all = await Promise.all(Array.from({ length: 12 }, (_, i) => request((i % 2 ? a : b).url + '/', { headers: { 'x-id': String(i) } })));
      const ok = all.filter((r) => r.status === 200);
      assert.ok(ok.length >= 3, `at least the queue up to the bound is served (${ok.length})`);
      for (const r of ok) assert.ok((r.json().delay as number) <= 120, `held ${r.json().delay} ms`);
      for (const r of all.filter((x) => x.status !== 200)) {
        assert.equal(r.status, 429);
        assert.deepEqual(r.json()['violated-policies'], ['smooth']);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('http when Redis goes away: the store failure policy decides, the server keeps serving', () => {
  let server: RedisServer;
  let client: Redis;
  before(async () => {
    server = await RedisServer.start();
    client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    client.on('error', () => { /* expected: the server is killed */ });
  });
  after(async () => {
    client.disconnect();
    await server.stop();
  });
  for (const [name, build] of ADAPTERS) {
    it(`${name}: deny → 503 with Retry-After, allow → served with headers, memory → decided locally`, async () => {
      const clock = new ManualClock();
      const policy = () => [rules.fixedWindow({ limit: 1, per: '1m', name: 'm' })];
      const app = await build([
        { method: 'GET', path: '/deny', limit: () => ({ rules: policy(), store: redisStore({ client, prefix: prefix(), onError: 'deny', timeout: 300 }), clock }) },
        { method: 'GET', path: '/allow', limit: () => ({ rules: policy(), store: redisStore({ client, prefix: prefix(), onError: 'allow', timeout: 300 }), clock }) },
        { method: 'GET', path: '/memory', limit: () => ({ rules: policy(), store: redisStore({ client, prefix: prefix(), onError: 'memory', timeout: 300 }), clock }) },
      ]);
      try {
        await server.restart();
        for (let i = 0; i < 100 && client.status !== 'ready'; i++) await new Promise((r) => setTimeout(r, 20));
        assert.equal((await request(app.url + '/deny')).status, 200, 'Redis up: decided by Redis');
        await server.kill();
        for (let i = 0; i < 100 && client.status === 'ready'; i++) await new Promise((r) => setTimeout(r, 20));
        const deny = await request(app.url + '/deny');
        assert.equal(deny.status, 503);
        assert.equal(deny.headers['retry-after'], '1');
        assert.match(String(deny.headers['content-type']), /^application\/problem\+json/);
        assert.equal(deny.headers.ratelimit, undefined, 'no quota is known: no RateLimit field');
        for (let i = 0; i < 2; i++) {
          const allow = await request(app.url + '/allow');
          assert.equal(allow.status, 200, 'fails open');
          assert.equal(allow.headers.ratelimit, undefined);
        }
        const local = await request(app.url + '/memory');
        assert.equal(local.status, 200);
        assert.deepEqual(items(local, 'RateLimit'), { m: { r: 0, t: 60 } }, 'the fallback store knows its quota');
        assert.equal((await request(app.url + '/memory')).status, 429, 'the local fallback store enforces the policy');
      } finally {
        await app.close();
      }
    });
  }
});
