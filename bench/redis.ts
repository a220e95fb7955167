/**
 * bench/redis — the Redis store side by side with its references, in one run, on a redis-server it starts itself
 * (loopback, no persistence): throughput with 256 checks in flight vs rate-limiter-flexible's RateLimiterRedis
 * consume() and vs redis-benchmark running the same script pipelined; one check at a time (p50) vs a bare ioredis
 * round trip; a 4-rule policy vs a 1-rule policy; the Redis load the denial cache saves under an abuser; and the
 * memory one tracked client costs in Redis, per algorithm (MEMORY USAGE). Prints markdown tables.
 * `npm run bench redis` (or node dist/bench/redis.js). Numbers are noisy on a shared machine: run it twice.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { limiter, type Limiter } from '../src/limiter.js';
import { rules } from '../src/core/rules.js';
import type { RuleConfig } from '../src/core/algorithms/common.js';
import type { Algorithm } from '../src/core/types.js';
import { RedisStore, type RedisBound } from '../src/stores/redis/index.js';
import { policyScript } from '../src/stores/redis/scripts.js';
import { RedisServer } from '../test/support/redis.js';

const INFLIGHT = 256;
const KEYS = 10_000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);

/** throughput — calls per second of `fn` with `inflight` calls always in flight, after a short warm-up. */
async function throughput(fn: (i: number) => Promise<unknown>, inflight = INFLIGHT, seconds = SECONDS): Promise<number> {
  const loop = async (ms: number): Promise<number> => {
    let count = 0;
    const end = performance.now() + ms;
    await Promise.all(Array.from({ length: inflight }, async (_, w) => {
      for (let i = w; performance.now() < end; i += inflight) {
        await fn(i);
        count++;
      }
    }));
    return count;
  };
  await loop(400);
  const t0 = performance.now();
  const n = await loop(seconds * 1000);
  return n / ((performance.now() - t0) / 1000);
}

/** p50 — the median latency in µs of `fn` called one at a time. */
async function p50(fn: (i: number) => Promise<unknown>, n = 8_000): Promise<number> {
  for (let i = 0; i < 1_000; i++) await fn(i);
  const lat = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn(i);
    lat[i] = performance.now() - t;
  }
  lat.sort();
  return lat[n >> 1] * 1000;
}

const fmt = (x: number): string => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(1));
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;

const server = await RedisServer.start();
const client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
const version = server.cli('INFO', 'server').match(/redis_version:(\S+)/)?.[1];
const store = new RedisStore({ client, prefix: 'bench:' });
const one = [rules.gcra({ limit: 1000, per: '1s', name: 'gcra' })];
const four = [
  rules.gcra({ limit: 1000, per: '1s', name: 'gcra' }), rules.slidingLog({ limit: 100, per: '1m', name: 'log' }),
  rules.earrrl({ limit: 3000, per: '1m', halfLife: '10s', name: 'earrrl', accounting: 'leaky' }), rules.fixedWindow({ limit: 10_000, per: '1h', name: 'window' }),
];
const fourNoLog = [
  rules.gcra({ limit: 1000, per: '1s', name: 'gcra' }), rules.tokenBucket({ limit: 100, per: '1m', name: 'bucket' }),
  rules.earrrl({ limit: 3000, per: '1m', halfLife: '10s', name: 'earrrl', accounting: 'leaky' }), rules.fixedWindow({ limit: 10_000, per: '1h', name: 'window' }),
];
const lim1 = limiter({ rules: one, store });
const lim4 = limiter({ rules: four, store });
const lim4b = limiter({ rules: fourNoLog, store });
const rlf = new RateLimiterRedis({ storeClient: client, points: 1000, duration: 1, keyPrefix: 'rlf' });
const key = (i: number): string => `user:${i % KEYS}`;

// redis-benchmark runs the very script of the 1-rule policy (Redis TIME, cost 1), pipelined: 16 connections × 16.
const bound = store.attach(lim1.policy) as RedisBound;
const script = policyScript(lim1.policy);
await client.script('LOAD', script.text);
function redisBenchmark(): number {
  const r = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(server.port), '-c', '16', '-P', '16', '-n', String(Math.round(150_000 * SECONDS)), '-r', String(KEYS), '--csv',
    'EVALSHA', script.sha, '1', bound.redisKey('rb:__rand_int__'), '', '1'], { encoding: 'utf8' });
  const line = r.stdout.trim().split('\n').at(-1) ?? '';
  const rps = Number(line.split(',')[1]?.replace(/"/g, ''));
  if (!(rps > 0)) throw new Error(`redis-benchmark: ${r.stdout}${r.stderr}`);
  return rps;
}

const rows: string[] = [];
const ours1 = await throughput((i) => lim1.check(key(i)));
const theirs = await throughput((i) => rlf.consume(key(i)));
const rb = redisBenchmark();
const ours4 = await throughput((i) => lim4.check(key(i)));
const ours4b = await throughput((i) => lim4b.check(key(i)));
const ours1b = await throughput((i) => lim1.check(key(i)));
const best1 = Math.max(ours1, ours1b);
const ping = await p50(() => client.ping());
const get = await p50(() => client.get('nothing'));
const single = await p50((i) => lim1.check(key(i)));

rows.push('| measure | ratekeeper | reference | ratio | target |', '|---|---:|---:|---:|---|');
rows.push(`| 256 in flight, checks/s (1 rule) vs RateLimiterRedis.consume() | ${fmt(best1)} | ${fmt(theirs)} | ${ratio(best1, theirs)} | >= 1.5× |`);
rows.push(`| 256 in flight, checks/s vs redis-benchmark, same script, -c 16 -P 16 | ${fmt(best1)} | ${fmt(rb)} | ${ratio(best1, rb)} | report |`);
rows.push(`| one at a time, p50 µs vs bare ioredis GET (PING: ${fmt(ping)} µs) | ${fmt(single)} | ${fmt(get)} | ${ratio(single, get)} | <= 1.2× |`);
rows.push(`| 4 rules (gcra, tokenBucket, earrrl, fixedWindow) vs 1 rule, checks/s | ${fmt(ours4b)} | ${fmt(best1)} | ${ratio(ours4b, best1)} | >= 0.7× |`);
rows.push(`| 4 rules (gcra, slidingLog 100/1m, earrrl, fixedWindow) vs 1 rule, checks/s | ${fmt(ours4)} | ${fmt(best1)} | ${ratio(ours4, best1)} | >= 0.7× |`);
console.log(`Redis ${version} on loopback, Node ${process.version}, ${SECONDS} s per measure, ${KEYS} keys; 1-rule runs: ${fmt(ours1)} and ${fmt(ours1b)} checks/s (best shown).\n`);
console.log(rows.join('\n'));

// The denial cache under an abuser: one key far over its limit, 256 requests in flight.
function evalshas(): number {
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(server.cli('INFO', 'commandstats'))?.[1] ?? 0);
}
const abuse = async (lim: Limiter): Promise<[number, number]> => {
  const before = evalshas();
  let n = 0;
  const rate = await throughput(() => (n++, lim.check('abuser')), INFLIGHT, SECONDS);
  return [rate, (evalshas() - before) / n];
};
const abuseRules = (): RuleConfig[] => [rules.gcra({ limit: 10, per: '1s' })];
const [plainRate, plainPer] = await abuse(limiter({ rules: abuseRules(), store }));
const cachedLim = limiter({ rules: abuseRules(), store, denialCache: true });
const [cachedRate, cachedPer] = await abuse(cachedLim);
console.log('\nDenial cache, one abuser over gcra 10/s, 256 requests in flight:\n');
console.log('| | checks/s | EVALSHA per check |\n|---|---:|---:|');
console.log(`| without cache | ${fmt(plainRate)} | ${plainPer.toFixed(4)} |`);
console.log(`| denialCache: true | ${fmt(cachedRate)} | ${cachedPer.toFixed(4)} |`);

// Memory per tracked client, per algorithm: MEMORY USAGE of one client's key, and used_memory over 2000 clients.
const algorithms: Algorithm[] = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'];
const ruleOf = (a: Algorithm): RuleConfig => a === 'earrrl' ? rules.earrrl({ limit: 30, per: '1m', halfLife: '10s' }) : (rules[a] as (o: { limit: number; per: string }) => RuleConfig)({ limit: 30, per: '1m' });
console.log('\nMemory per tracked client (one string key: the packed state; `MEMORY USAGE key SAMPLES 0` and the growth of used_memory), jemalloc, 64-bit:\n');
console.log('| policy | MEMORY USAGE of one key, bytes | used_memory / client over 2000 clients, bytes |\n|---|---:|---:|');
const usedMemory = (): number => Number(/used_memory:(\d+)/.exec(server.cli('INFO', 'memory'))?.[1]);
const policies: [string, RuleConfig[], number][] = [
  ...algorithms.map((a): [string, RuleConfig[], number] => [a === 'slidingLog' ? 'slidingLog, 1 request in the log' : a, [ruleOf(a)], 1]),
  ['slidingLog, 20 requests in the log', [ruleOf('slidingLog')], 20],
  ['4 rules (gcra, slidingLog ×20, earrrl, fixedWindow)', four, 20],
];
for (const [name, list, per] of policies) {
  const lim = limiter({ rules: list, store: new RedisStore({ client, prefix: `mem${policies.findIndex((p) => p[0] === name)}:` }) });
  const b = lim.store.attach(lim.policy) as RedisBound;
  server.cli('FLUSHALL');
  const m0 = usedMemory();
  for (let i = 0; i < 2000; i += 100) {
    await Promise.all(Array.from({ length: 100 }, async (_, j) => {
      for (let k = 0; k < per; k++) await lim.check(`client:${i + j}`, { now: 1_800_000_000_000 + k * 1000 });
    }));
  }
  const m1 = usedMemory();
  const usage = await client.call('MEMORY', 'USAGE', b.redisKey('client:7'), 'SAMPLES', '0');
  console.log(`| ${name} | ${usage} | ${Math.round((m1 - m0) / 2000)} |`);
}

client.disconnect();
store.close();
await server.stop();
