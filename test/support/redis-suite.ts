/**
 * test/support/redis-suite — the hooks a test file uses to get a real server (or cluster) and a client for one
 * suite. Separate from redis.ts, which the benchmarks use too and which must not load node:test.
 */
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import type { NodeRedisLike } from '../../src/stores/redis/index.js';
import { RedisCluster, RedisServer } from './redis.js';

/** Suite — a running server (or cluster) and an ioredis client to it, filled in by the suite's `before` hook. */
export interface RedisSuite<S, C> {
  server: S;
  client: C;
}

/**
 * useRedis — a standalone redis-server and an ioredis client (failing fast while it is away) for the enclosing
 * `describe` (or the file): started in `before`, disconnected and stopped in `after`. Read `.client` in tests.
 */
export function useRedis(): RedisSuite<RedisServer, Redis> {
  const suite = {} as RedisSuite<RedisServer, Redis>;
  before(async () => {
    suite.server = await RedisServer.start();
    suite.client = new Redis({ host: '127.0.0.1', port: suite.server.port, maxRetriesPerRequest: 1 });
  });
  after(async () => {
    suite.client.disconnect();
    await suite.server.stop();
  });
  return suite;
}

/** useCluster — the same for a 3-master Redis Cluster and an ioredis Cluster client. */
export function useCluster(): RedisSuite<RedisCluster, Cluster> {
  const suite = {} as RedisSuite<RedisCluster, Cluster>;
  before(async () => {
    suite.server = await RedisCluster.start();
    suite.client = new Cluster(suite.server.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
  });
  after(async () => {
    suite.client.disconnect();
    await suite.server.stop();
  });
  return suite;
}

/** uniquePrefix — a key prefix no other test uses, so that tests sharing a server never share state. */
export function uniquePrefix(tag: string): string {
  return `${tag}:${randomBytes(4).toString('hex')}:`;
}

/** NodeRedis — a node-redis client or cluster (the `redis` package), as the store takes it. */
export type NodeRedis = NodeRedisLike & { disconnect?: () => Promise<void>; destroy?: () => void };

/** closeNodeRedis — closes a node-redis client or cluster without waiting for replies (v5+: destroy; v4: disconnect). */
async function closeNodeRedis(c: NodeRedis): Promise<void> {
  if (typeof c.destroy === 'function') c.destroy();
  else await c.disconnect?.();
}

/** useNodeRedis — a standalone redis-server and a connected node-redis client (`createClient`). */
export function useNodeRedis(): RedisSuite<RedisServer, NodeRedis> {
  const suite = {} as RedisSuite<RedisServer, NodeRedis>;
  before(async () => {
    suite.server = await RedisServer.start();
    const c = createClient({ url: `redis://127.0.0.1:${suite.server.port}` });
    c.on('error', () => {});
    await c.connect();
    suite.client = c as unknown as NodeRedis;
  });
  after(async () => {
    await closeNodeRedis(suite.client);
    await suite.server.stop();
  });
  return suite;
}

/** useNodeRedisCluster — a 3-master Redis Cluster and a connected node-redis cluster client (`createCluster`). */
export function useNodeRedisCluster(): RedisSuite<RedisCluster, NodeRedis> {
  const suite = {} as RedisSuite<RedisCluster, NodeRedis>;
  before(async () => {
    suite.server = await RedisCluster.start();
    const c = createCluster({ rootNodes: suite.server.startupNodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) });
    c.on('error', () => {});
    await c.connect();
    suite.client = c as unknown as NodeRedis;
  });
  after(async () => {
    await closeNodeRedis(suite.client);
    await suite.server.stop();
  });
  return suite;
}
