/**
 * bench/redis-wait — what `wait` (WAIT after the charging calls) costs: a master with one replica on loopback (and,
 * for TLS, the same over TLS), one ioredis client, checks of one fixedWindow rule on distinct keys: sequential (the
 * latency of one check) and 64 in flight (throughput), without WAIT and with `wait: { replicas: 1, timeout: 50 }`.
 * `npm run bench redis-wait` (not in the default list: it starts its own servers). Short: ~2 s per row.
 */
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { RedisServer } from '../test/support/redis.js';
import { makeCerts } from '../test/support/tls.js';
import { limiter, rules } from '../src/index.js';
import { redisStore, type RedisStore } from '../src/stores/redis/index.js';

const MS = 2000;

async function row(name: string, client: Redis, wait: boolean): Promise<void> {
  const store: RedisStore = redisStore({ client, prefix: `bw${Math.random()}:`, ...(wait ? { wait: { replicas: 1, timeout: 50 } } : {}) });
  const lim = limiter({ rules: [rules.fixedWindow({ limit: 1e9, per: '1d' })], store });
  let i = 0;
  for (let k = 0; k < 200; k++) await lim.check(`w${k}`); // warm up
  const lat: number[] = [];
  let end = performance.now() + MS / 2;
  while (performance.now() < end) {
    const t0 = performance.now();
    await lim.check(`s${i++}`);
    lat.push(performance.now() - t0);
  }
  lat.sort((a, b) => a - b);
  let done = 0;
  end = performance.now() + MS / 2;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      await lim.check(`c${i++}`);
      done++;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  const q = (p: number): string => lat[Math.floor(p * (lat.length - 1))].toFixed(3);
  console.log(`| ${name} | ${wait ? 'WAIT 1 50' : '—'} | ${q(0.5)} | ${q(0.99)} | ${Math.round(done / (MS / 2000))} | ${store.waitShortfalls} |`);
}

async function main(): Promise<void> {
  const certs = makeCerts();
  const tls = { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, clients: 'no' as const, replication: true };
  console.log('| server | wait | sequential p50 ms | p99 ms | checks/s, 64 in flight | WAIT shortfalls |');
  console.log('|---|---|---|---|---|---|');
  for (const withTls of [false, true]) {
    const master = await RedisServer.start([], false, withTls ? { tls } : {});
    const replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)], false, withTls ? { tls } : {});
    for (let k = 0; k < 200 && !/master_link_status:up/.test(replica.cli('INFO', 'replication')); k++) await new Promise((r) => setTimeout(r, 25));
    const client = new Redis({ host: '127.0.0.1', port: master.port, ...(withTls ? { tls: { ca: readFileSync(certs.ca, 'utf8') } } : {}) });
    for (const wait of [false, true]) await row(withTls ? 'TLS, 1 replica' : 'plain, 1 replica', client, wait);
    client.disconnect();
    await replica.stop();
    await master.stop();
  }
}

main().then(() => process.exit(0), (e: unknown) => {
  console.error(e);
  process.exit(1);
});
