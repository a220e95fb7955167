/**
 * batch-worker — one of the processes of batch-concurrency.test: connects to standalone Redis or a Cluster, builds a
 * limiter of one rule (batch on or off), waits for 'go', fires its checks all at once on one key, reports how many
 * were admitted and the store's batch counters. argv: ports (comma-separated; several: a Cluster), prefix, algorithm,
 * limit, checks, batch ('1'/'0'). Without an IPC channel (run by the test runner itself) it does nothing.
 */
import { Cluster, Redis } from 'ioredis';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { Algorithm } from '../../src/core/types.js';
import { RedisStore } from '../../src/stores/redis/index.js';

if (process.send !== undefined) await main();

async function main(): Promise<void> {
  const [ports, prefix, algorithm, limit, checks, batch] = process.argv.slice(2);
  const list = ports.split(',').map(Number);
  const client = list.length > 1
    ? new Cluster(list.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { maxRetriesPerRequest: 1 } })
    : new Redis({ host: '127.0.0.1', port: list[0], maxRetriesPerRequest: 1 });
  const rule = algorithm === 'earrrl'
    ? rules.earrrl({ limit: Number(limit), per: '1h', halfLife: '1h' })
    : (rules[algorithm as Exclude<Algorithm, 'earrrl'>] as (o: { limit: number; per: string }) => ReturnType<typeof rules.gcra>)({ limit: Number(limit), per: '1h' });
  const store = new RedisStore({ client, prefix, timeout: 10_000, batch: batch === '1' });
  const lim = limiter({ rules: [rule], store });
  // the scripts loaded where the race's key lives (a batch of two looks at it, which charge nothing: the batch script
  // too; on a Cluster another key may live on another master, which would answer the race's first batches NOSCRIPT)
  // and the connection ready before the start
  await Promise.all([lim.peek('one-key'), lim.peek('one-key')]);
  process.send?.('ready');
  process.on('message', async () => {
    const ds = await Promise.all(Array.from({ length: Number(checks) }, () => lim.check('one-key')));
    const unavailable = ds.filter((d) => d.reason === 'store-unavailable').length;
    const stats = store.batcher?.stats ?? { batches: 0, checks: 0, largest: 0 };
    process.send?.({ admitted: ds.filter((d) => d.allowed).length, unavailable, ...stats });
    client.disconnect();
  });
}
