/**
 * The scenario table on a standalone Redis and on a 3-master Redis Cluster, through ioredis and through node-redis:
 * the same decisions as the memory store.
 */
import { describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { uniquePrefix, useCluster, useNodeRedis, useNodeRedisCluster, useRedis, type RedisSuite } from '../support/redis-suite.js';
import { scenarios } from './scenarios.js';
import { checkExpectations, compare, run } from './run.js';

/** conform — every scenario on the suite's store, decisions compared with the memory store's. */
function conform(redis: RedisSuite<unknown, ConstructorParameters<typeof RedisStore>[0]['client']>): void {
  for (const s of scenarios) {
    // boundary rows included: an expiry past what PX takes is stored without one (policy.lua)
    test(s.name, async () => {
      const ref = await run(new MemoryStore(), s);
      const got = await run(new RedisStore({ client: redis.client, prefix: uniquePrefix('conf'), timeout: 5000 }), s);
      compare(s, ref, got);
      checkExpectations(s, got);
    });
  }
}

/** conformShared — every scenario with a policy id (keys named by the id and layout; gcra keeps its interval): the same decisions. */
function conformShared(redis: RedisSuite<unknown, ConstructorParameters<typeof RedisStore>[0]['client']>): void {
  for (const s of scenarios) {
    test(`${s.name} (shared: a policy with an id)`, async () => {
      const ref = await run(new MemoryStore(), s);
      const got = await run(new RedisStore({ client: redis.client, prefix: uniquePrefix('confid'), timeout: 5000 }), s, 'the-id');
      compare(s, ref, got);
      checkExpectations(s, got);
    });
  }
}

describe('conformance on a standalone Redis', () => conform(useRedis()));
describe('conformance on a standalone Redis, policies with an id', () => conformShared(useRedis()));
describe('conformance on a 3-master Redis Cluster, policies with an id', () => conformShared(useCluster()));
describe('conformance on a 3-master Redis Cluster', () => conform(useCluster()));
describe('conformance on a standalone Redis, node-redis client', () => conform(useNodeRedis()));
describe('conformance on a 3-master Redis Cluster, node-redis cluster', () => conform(useNodeRedisCluster()));
