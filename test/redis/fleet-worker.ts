/**
 * fleet-worker — one instance of fleet.test's fleet of processes: a Redis store (onError 'memory', a fleet registry
 * with a 100 ms heartbeat) and one limiter per rule of RULES on one key. Messages: 'size' → waits until the registry
 * counts `want` instances and answers N; { hammer: key } → 150 concurrent checks of `key` per limiter, answers
 * per rule the admitted count and how many the fallback decided, and N and the heartbeats answered after it; 'close'
 * → unregisters and exits.
 * argv: port (a standalone server) or ports joined by commas (a Cluster's masters), prefix, want. Run by the test
 * runner itself (every file under test/ is), without an IPC channel, it does nothing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, Redis } from 'ioredis';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import { RedisStore } from '../../src/stores/redis/index.js';

/** WORKER_RULES — the rules each process checks (the test compares each with the exact mode). */
export const WORKER_RULES = [
  rules.fixedWindow({ limit: 100, per: '1h' }),
  rules.gcra({ limit: 100, per: '1h', burst: 40 }),
  rules.earrrl({ limit: 100, per: '1h', halfLife: '10m' }),
];

/** Hammered — per rule: admitted, and decided by the fallback; the fleet's N and the heartbeats answered, after the hammer. */
export type Hammered = { admitted: number[]; fallback: number[]; size: number; beats: number };

if (process.send !== undefined) await main();

async function main(): Promise<void> {
  const [port, prefix, want] = process.argv.slice(2);
  const ports = port.split(',').map(Number);
  const client = ports.length === 1
    ? new Redis({ host: '127.0.0.1', port: ports[0], maxRetriesPerRequest: 1 })
    : new Cluster(ports.map((p) => ({ host: '127.0.0.1', port: p })), { redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {});
  const store = new RedisStore({ client, prefix, onError: 'memory', timeout: 150, fleet: { expiry: 5000, interval: 100 } });
  const lims = WORKER_RULES.map((rule) => limiter({ rules: [rule], store }));
  await lims[0].peek('warm-up');
  process.send?.('ready');
  process.on('message', async (m: unknown) => {
    if (m === 'size') {
      for (let i = 0; i < 100 && store.fleetSize !== Number(want); i++) await sleep(50);
      process.send?.(store.fleetSize);
    } else if (m === 'close') {
      await store.fleet?.close();
      store.close();
      client.disconnect();
      process.exit(0);
    } else {
      const key = (m as { hammer: string }).hammer;
      const out: Hammered = { admitted: [], fallback: [], size: 0, beats: 0 };
      for (const lim of lims) {
        const ds = await Promise.all(Array.from({ length: 150 }, () => lim.check(key)));
        out.admitted.push(ds.filter((d) => d.allowed).length);
        out.fallback.push(ds.filter((d) => d.fallback === true).length);
      }
      out.size = store.fleetSize;
      out.beats = store.fleet?.beats ?? 0;
      process.send?.(out);
    }
  });
}
