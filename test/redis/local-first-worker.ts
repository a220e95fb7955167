/**
 * local-first-worker — one of the processes of local-first.test: connects to Redis (a standalone server or the
 * Cluster), builds a limiter of one rule in local-first mode, waits for 'go', hammers one key with `checks` checks
 * (`inFlight` at a time), flushes, and reports how many were admitted. With `hold`, it reports after the checks and
 * waits to be killed without flushing (an instance that dies with unsynced cost).
 * argv[2]: JSON of WorkerConfig. Run by the test runner itself (every file under test/ is), without an IPC channel, it
 * does nothing.
 */
import { Cluster, Redis } from 'ioredis';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { Algorithm } from '../../src/core/types.js';
import { redisStore, type RedisStore } from '../../src/stores/redis/index.js';

export interface WorkerConfig {
  ports: number[];
  cluster: boolean;
  prefix: string;
  algorithm: Algorithm;
  limit: number;
  per: string;
  checks: number;
  inFlight: number;
  maxUnsynced: number;
  flushEvery: number;
  cold?: 'fetch' | 'fresh';
  key?: string;
  hold?: boolean;
}

if (process.send !== undefined) await main();

async function main(): Promise<void> {
  const c = JSON.parse(process.argv[2]) as WorkerConfig;
  const client = c.cluster
    ? new Cluster(c.ports.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { maxRetriesPerRequest: 1 } })
    : new Redis({ host: '127.0.0.1', port: c.ports[0], maxRetriesPerRequest: 1 });
  const rule = c.algorithm === 'earrrl'
    ? rules.earrrl({ limit: c.limit, per: c.per, halfLife: c.per })
    : (rules[c.algorithm as Exclude<Algorithm, 'earrrl'>] as (o: { limit: number; per: string }) => ReturnType<typeof rules.gcra>)({ limit: c.limit, per: c.per });
  const store = redisStore({ client, prefix: c.prefix, timeout: 10_000, ...(c.maxUnsynced > 0 ? { localFirst: { maxUnsynced: c.maxUnsynced, flushEvery: c.flushEvery, cold: c.cold } } : {}) });
  const lim = limiter({ rules: [rule], store });
  await lim.peek('warm-up'); // the scripts' connection ready before the start
  process.send?.('ready');
  process.on('message', async () => {
    const key = c.key ?? 'one-key';
    const t0 = performance.now();
    let admitted = 0;
    let unavailable = 0;
    let next = 0;
    const one = async (): Promise<void> => {
      while (next < c.checks) {
        next++;
        const d = await lim.check(key);
        if (d.allowed) admitted++;
        if (d.reason === 'store-unavailable') unavailable++;
      }
    };
    await Promise.all(Array.from({ length: c.inFlight }, one));
    const stats = (store as RedisStore).localFirstStats();
    const elapsed = performance.now() - t0;
    if (c.hold) {
      process.send?.({ admitted, unavailable, stats, elapsed });
      return;
    }
    await (store as RedisStore).flush();
    process.send?.({ admitted, unavailable, stats: (store as RedisStore).localFirstStats(), elapsed });
    client.disconnect();
  });
}
