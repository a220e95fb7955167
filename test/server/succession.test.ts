/**
 * A reload that changes a limit's rules compatibly (the same algorithms and periods; limit, burst, half-life changed)
 * carries every client's state, block and exemption over to the new limiter, judged by the new rule — on the memory
 * store, a standalone Redis and the 3-master cluster (issue 15, section 4: tightening a limit during an attack must
 * not forgive the attackers). Another algorithm or period starts fresh. The denial cache follows the reload.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import type { Store } from '../../src/stores/types.js';
import { RateLimitService } from '../../src/server/service.js';
import type { RlsRequest } from '../../src/server/rls.js';
import { uniquePrefix, useCluster, useRedis } from '../support/redis-suite.js';
import { configFrom } from './support.js';

/** T0 — the start of a minute, ms. */
const T0 = Date.UTC(2026, 10, 23);

const envoy = (rpu: number, algorithm = 'fixed-window', unit = 'minute'): string =>
  `domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: ${unit}, requests_per_unit: ${rpu}, algorithm: ${algorithm} }\n`;
const native = (limit: number, algorithm = 'gcra'): string =>
  `domain: d\ndescriptors: []\npolicies:\n  api: { rules: [ { algorithm: ${algorithm}, limit: ${limit}, per: 1m } ] }\n`;
const user = (value: string): RlsRequest => ({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value }] }] });

function suite(store: () => Store): void {
  for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-log', 'token-bucket', 'leaky-bucket', 'gcra', 'exponential']) {
    test(`${algorithm}: 2 of 2/min, reloaded to 100/min: 98 left; 50 of 100/min, reloaded to 2/min: refused`, async () => {
      const now = T0;
      const service = new RateLimitService({ store: store(), clock: { now: () => now } });
      service.setConfig(await configFrom(envoy(2, algorithm)));
      for (let i = 0; i < 2; i++) assert.equal((await service.shouldRateLimit(user('a'))).overall_code, 'OK');
      assert.equal((await service.shouldRateLimit(user('a'))).overall_code, 'OVER_LIMIT');
      for (let i = 0; i < 50; i++) assert.equal((await service.shouldRateLimit(user('b'))).overall_code, i < 2 ? 'OK' : 'OVER_LIMIT');
      service.setConfig(await configFrom(envoy(100, algorithm)));
      const a = await service.shouldRateLimit(user('a'));
      assert.equal(a.overall_code, 'OK');
      if (algorithm !== 'exponential') assert.equal(a.statuses[0].limit_remaining, 97, `${algorithm}: 98 left before this one`);
      else assert.ok(a.statuses[0].limit_remaining <= 97, `${algorithm}: ${a.statuses[0].limit_remaining}`);
      for (let i = 0; i < 48; i++) await service.shouldRateLimit(user('c'));
      service.setConfig(await configFrom(envoy(2, algorithm)));
      assert.equal((await service.shouldRateLimit(user('c'))).overall_code, 'OVER_LIMIT', `${algorithm}: 48 of 100 used, refused under 2/min`);
    });
  }

  test('a native policy lowered from 100/min to 2/min refuses the client that used 50', async () => {
    const service = new RateLimitService({ store: store(), clock: { now: () => T0 } });
    service.setConfig(await configFrom(native(100)));
    for (let i = 0; i < 50; i++) assert.equal((await service.check('api', 'mallory', 1)).allowed, true);
    service.setConfig(await configFrom(native(2)));
    const d = await service.check('api', 'mallory', 1);
    assert.equal(d.allowed, false);
    assert.ok(Math.abs(d.retryAfter - 49 * 30_000) < 1, `retryAfter ${d.retryAfter}`);
    assert.equal((await service.check('api', 'alice', 1)).allowed, true, 'a client never seen is fresh');
  });

  test('a block and an exemption survive a rule change', async () => {
    const service = new RateLimitService({ store: store(), clock: { now: () => T0 } });
    service.setConfig(await configFrom(native(100)));
    const lim = service.policy('api')!.limiter;
    // the policy's limiter speaks the clients' keys (its namespace is below its API)
    await lim.block('mallory', { reason: 'attack' });
    await lim.exempt('ops');
    service.setConfig(await configFrom(native(2)));
    const d = await service.check('api', 'mallory', 1);
    assert.deepEqual([d.allowed, d.reason, d.blockReason], [false, 'blocked', 'attack']);
    assert.equal((await service.check('api', 'ops', 1)).reason, 'exempt');
  });

  test('another algorithm or period starts fresh', async () => {
    const service = new RateLimitService({ store: store(), clock: { now: () => T0 } });
    service.setConfig(await configFrom(envoy(2, 'gcra')));
    for (let i = 0; i < 2; i++) await service.shouldRateLimit(user('a'));
    service.setConfig(await configFrom(envoy(2, 'token-bucket')));
    assert.equal((await service.shouldRateLimit(user('a'))).statuses[0].limit_remaining, 1, 'another algorithm');
    service.setConfig(await configFrom(envoy(2, 'token-bucket', 'second')));
    assert.equal((await service.shouldRateLimit(user('a'))).statuses[0].limit_remaining, 1, 'another period');
  });

  test('the denial cache follows a reload: a cached refusal is dropped when the limiter changes', async () => {
    const service = new RateLimitService({ store: store(), clock: { now: () => T0 }, denialCache: true });
    service.setConfig(await configFrom(envoy(2, 'gcra')));
    for (let i = 0; i < 3; i++) await service.shouldRateLimit(user('a'));
    assert.equal((await service.shouldRateLimit(user('a'))).overall_code, 'OVER_LIMIT', 'refused (and cached)');
    service.setConfig(await configFrom(envoy(100, 'gcra')));
    const r = await service.shouldRateLimit(user('a'));
    assert.deepEqual([r.overall_code, r.statuses[0].limit_remaining], ['OK', 97]);
  });
}

describe('succession in the service, memory store', () => suite(() => new MemoryStore()));
describe('succession in the service, standalone Redis', () => {
  const redis = useRedis();
  suite(() => new RedisStore({ client: redis.client, prefix: uniquePrefix('succ'), timeout: 5000 }));
});
describe('succession in the service, 3-master Redis Cluster', () => {
  const redis = useCluster();
  suite(() => new RedisStore({ client: redis.client, prefix: uniquePrefix('succ'), timeout: 5000 }));
});
