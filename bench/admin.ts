/**
 * bench/admin — what observation costs, side by side in one run (`npm run bench admin`): check() with `observe` on
 * vs off on the memory store (100k keys round-robin) and on Redis (a server started here, 256 checks in flight),
 * in alternating rounds (off, on, on, off …) with the median and the spread of the on/off ratio; and the top list of
 * 1M distinct clients: how long `top()` takes and the bytes the summary holds. Prints markdown tables.
 * Numbers are noisy on a shared machine: the load average is printed before and after.
 */
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { limiter, rules, memoryStore, type Limiter } from '../src/index.js';
import { HeavyHitters } from '../src/observe/heavyHitters.js';
import { RedisStore } from '../src/stores/redis/index.js';
import { RedisServer } from '../test/support/redis.js';

const gc = (globalThis as { gc?: () => void }).gc;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const RUN_MS = Number(process.env.BENCH_MS ?? 1000);
const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const p95 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)];
const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');
console.log(`Node ${process.version}, ${ROUNDS} alternating rounds of ${RUN_MS} ms; load average before: ${load()}.\n`);

/** rounds — ops/s of each contender per round, the contenders alternating within each round (in ABBA order). */
async function rounds(contenders: (() => Promise<number>)[]): Promise<number[][]> {
  for (const c of contenders) await c(); // warm-up
  const out = contenders.map((): number[] => []);
  for (let r = 0; r < ROUNDS; r++) {
    // ABBA: the order flips every round, so that neither runs first (after the other's garbage) more often
    const order = contenders.map((_, i) => (r % 2 === 0 ? i : contenders.length - 1 - i));
    for (const i of order) {
      gc?.();
      out[i].push(await contenders[i]());
    }
  }
  return out;
}

/** report — one table row per pair: best and median ops/s of off and on, and the on/off ratio per round (median, min–max). */
function report(name: string, off: number[], on: number[]): string {
  const ratios = off.map((o, i) => on[i] / o);
  const cost = (1 - median(ratios)) * 100;
  return `| ${name} | ${fmt(median(off))} | ${fmt(median(on))} | ${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}) | ${cost.toFixed(1)} % |`;
}
const header = '| check() | off, checks/s (median) | on, checks/s (median) | on/off per round: median (min–max) | cost |\n|---|---:|---:|---:|---:|';

// ---- top of 1M distinct clients ----
const CLIENTS = 1_000_000;
const capacity = 1000;
gc?.();
gc?.();
const heap0 = process.memoryUsage().heapUsed;
const hh = new HeavyHitters({ capacity, halfLife: 10_000 });
const t0 = Date.now();
const feed0 = performance.now();
for (let i = 0; i < CLIENTS; i++) {
  hh.add(`client:${i}`, 1, t0 + i / 100, false, Number.NaN);
  if (i % 20 === 0) hh.add('abuser', 1, t0 + i / 100, true, Number.NaN);
}
const feedMs = performance.now() - feed0;
gc?.();
gc?.();
const heap1 = process.memoryUsage().heapUsed;
const now = t0 + CLIENTS / 100;
const times: number[] = [];
let first = '';
for (let r = 0; r < 50; r++) {
  const s = performance.now();
  const top = hh.top(100, now);
  times.push(performance.now() - s);
  first = top[0].key;
}
const lim = limiter({ rules: [rules.gcra({ limit: 1000, per: '1s' })], store: memoryStore({ maxKeys: 10 }), observe: { capacity, samples: Infinity } });
for (let i = 0; i < CLIENTS; i++) lim.checkSync(i % 20 === 0 ? 'abuser' : `client:${i}`, { now: t0 + i / 100 });
const viaLimiter: number[] = [];
for (let r = 0; r < 50; r++) {
  const s = performance.now();
  await lim.top({ n: 100, now });
  viaLimiter.push(performance.now() - s);
}
console.log(`Top of ${fmt(CLIENTS)} distinct clients (plus one abuser at 1/20 of the traffic), capacity ${capacity}:\n`);
console.log('| measure | value |\n|---|---:|');
console.log(`| feeding ${fmt(CLIENTS)} requests into the summary | ${feedMs.toFixed(0)} ms (${fmt((CLIENTS * 1.05 * 1000) / feedMs)} adds/s) |`);
console.log(`| HeavyHitters.top(100): median (95th percentile) of 50 | ${median(times).toFixed(2)} ms (${p95(times).toFixed(2)} ms) |`);
console.log(`| limiter.top({ n: 100 }) incl. block lookup: median (95th percentile) of 50 | ${median(viaLimiter).toFixed(2)} ms (${p95(viaLimiter).toFixed(2)} ms) |`);
console.log(`| heaviest listed | ${first} |`);
console.log(`| counters (typed arrays), bytes | ${fmt(hh.bytes)} |`);
console.log(`| heap held after 1M clients (counters, Map, ${capacity} key strings), bytes | ${gc ? fmt(heap1 - heap0) : 'run with --expose-gc'} |`);
console.log(`| decision series (1 s × 1 h, 1 rule), bytes | ${fmt(lim.observer!.series.bytes)} |`);
// ---- memory store, 100k keys ----
const KEYS = 100_000;
const keys = Array.from({ length: KEYS }, (_, i) => `user:${i}`);
const policy = [rules.gcra({ limit: 1000, per: '1s', name: 'gcra' })];
const earrrl = [rules.earrrl({ limit: 1000, per: '1s', halfLife: '10s', name: 'earrrl', accounting: 'leaky' })];
function memoryPair(r: typeof policy): [Limiter, Limiter] {
  return [limiter({ rules: r, store: memoryStore() }), limiter({ rules: r, store: memoryStore(), observe: true })];
}
const timed = (fn: (i: number) => unknown): (() => Promise<number>) => async () => {
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < RUN_MS) {
    for (let i = 0; i < KEYS; i++) fn(i);
    n += KEYS;
    t = performance.now();
  }
  return (n * 1000) / (t - t0);
};
const timedAsync = (fn: (i: number) => Promise<unknown>): (() => Promise<number>) => async () => {
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < RUN_MS) {
    for (let i = 0; i < KEYS; i += 1000) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < i + 1000; j++) batch.push(fn(j));
      await Promise.all(batch);
    }
    n += KEYS;
    t = performance.now();
  }
  return (n * 1000) / (t - t0);
};
const rows: string[] = [];
for (const [label, r] of [['gcra', policy], ['earrrl', earrrl]] as const) {
  const [off, on] = memoryPair(r as typeof policy);
  const [a, b] = await rounds([timedAsync((i) => off.check(keys[i])), timedAsync((i) => on.check(keys[i]))]);
  rows.push(report(`memory, ${label}, await check()`, a, b));
  const [c, d] = await rounds([timed((i) => off.checkSync(keys[i])), timed((i) => on.checkSync(keys[i]))]);
  rows.push(report(`memory, ${label}, checkSync()`, c, d));
}
console.log(`\nMemory store, ${fmt(KEYS)} keys round-robin, nothing refused:\n`);
console.log(header);
console.log(rows.join('\n'));

// ---- Redis, 256 in flight ----
const server = await RedisServer.start();
try {
  const client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
  const INFLIGHT = 256;
  const RKEYS = 10_000;
  const off = limiter({ rules: policy, store: new RedisStore({ client, prefix: 'off:' }) });
  const on = limiter({ rules: policy, store: new RedisStore({ client, prefix: 'on:' }), observe: true });
  const flight = (lim: Limiter): (() => Promise<number>) => async () => {
    let n = 0;
    const t0 = performance.now();
    const end = t0 + RUN_MS;
    await Promise.all(Array.from({ length: INFLIGHT }, async (_, w) => {
      for (let i = w; performance.now() < end; i += INFLIGHT) {
        await lim.check(keys[i % RKEYS]);
        n++;
      }
    }));
    return (n * 1000) / (performance.now() - t0);
  };
  const [a, b] = await rounds([flight(off), flight(on)]);
  console.log(`\nRedis ${server.cli('INFO', 'server').match(/redis_version:(\S+)/)?.[1]} on loopback, ${fmt(RKEYS)} keys, ${INFLIGHT} checks in flight (on: the summary shared every 5 s):\n`);
  console.log(header);
  console.log(report('redis, gcra', a, b));
  await on.close();
  await off.close();
  client.disconnect();
} finally {
  await server.stop();
}

console.log(`\nLoad average after: ${load()}.`);
