/**
 * concurrency-worker — one of the processes of concurrency.test: connects to Redis, builds a limiter of one rule,
 * waits for 'go', fires its checks all at once on one key, and reports how many were admitted.
 * argv: port, prefix, algorithm, limit, checks. Run by the test runner itself (every file under test/ is), without
 * an IPC channel, it does nothing.
 */
import { Redis } from 'ioredis';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { Algorithm } from '../../src/core/types.js';
import { redisStore } from '../../src/stores/redis/index.js';

if (process.send !== undefined) await main();

async function main(): Promise<void> {
  const [port, prefix, algorithm, limit, checks] = process.argv.slice(2);
  const client = new Redis({ host: '127.0.0.1', port: Number(port), maxRetriesPerRequest: 1 });
  const rule = algorithm === 'earrrl'
    ? rules.earrrl({ limit: Number(limit), per: '1h', halfLife: '1h' })
    : (rules[algorithm as Exclude<Algorithm, 'earrrl'>] as (o: { limit: number; per: string }) => ReturnType<typeof rules.gcra>)({ limit: Number(limit), per: '1h' });
  const lim = limiter({ rules: [rule], store: redisStore({ client, prefix, timeout: 10_000 }) });
  await lim.peek('warm-up'); // the script is loaded and the connection ready before the start
  process.send?.('ready');
  process.on('message', async () => {
    const ds = await Promise.all(Array.from({ length: Number(checks) }, () => lim.check('one-key')));
    const unavailable = ds.filter((d) => d.reason === 'store-unavailable').length;
    process.send?.({ admitted: ds.filter((d) => d.allowed).length, unavailable });
    client.disconnect();
  });
}
