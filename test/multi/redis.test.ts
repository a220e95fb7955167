/**
 * The compound table (checkAll, refunds) on a standalone Redis (one script per compound request) and on a 3-master
 * Redis Cluster (the parts' keys in several slots: decide, then refund): the same decisions as the memory store.
 */
import { describe, test } from 'node:test';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { uniquePrefix, useCluster, useRedis, type RedisSuite } from '../support/redis-suite.js';
import { scenarios, run, checkExpectations, compare } from './table.js';

function conform(redis: RedisSuite<unknown, ConstructorParameters<typeof RedisStore>[0]['client']>, cluster: boolean): void {
  for (const s of scenarios) {
    test(s.name, async () => {
      const ref = await run(new MemoryStore(), s);
      const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('multi'), timeout: 5000 });
      const got = await run(store, s);
      compare(s, ref, got, cluster && s.approximate === true);
      checkExpectations(s, got);
    });
  }
}

describe('compound requests and refunds on a standalone Redis', () => conform(useRedis(), false));
describe('compound requests and refunds on a 3-master Redis Cluster', () => conform(useCluster(), true));
