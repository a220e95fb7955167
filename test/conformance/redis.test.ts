/** The scenario table on a standalone Redis and on a 3-master Redis Cluster: the same decisions as the memory store. */
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisCluster, RedisServer } from '../support/redis.js';
import { scenarios } from './scenarios.js';
import { checkExpectations, compare, run } from './run.js';

const prefix = (): string => `conf:${randomBytes(4).toString('hex')}:`;

describe('conformance on a standalone Redis', () => {
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
  for (const s of scenarios) {
    test(s.name, async () => {
      const ref = await run(new MemoryStore(), s);
      const got = await run(new RedisStore({ client, prefix: prefix(), timeout: 5000 }), s);
      compare(s, ref, got);
      checkExpectations(s, got);
    });
  }
});

describe('conformance on a 3-master Redis Cluster', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  before(async () => {
    cluster = await RedisCluster.start();
    client = new Cluster(cluster.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
  });
  after(async () => {
    client.disconnect();
    await cluster.stop();
  });
  for (const s of scenarios) {
    test(s.name, async () => {
      const ref = await run(new MemoryStore(), s);
      const got = await run(new RedisStore({ client, prefix: prefix(), timeout: 5000 }), s);
      compare(s, ref, got);
      checkExpectations(s, got);
    });
  }
});
