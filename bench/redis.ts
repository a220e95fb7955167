/**
 * bench/redis — the Redis store side by side with its references, in one run, on a redis-server it starts itself
 * (loopback, no persistence): throughput with 256 checks in flight vs rate-limiter-flexible's RateLimiterRedis
 * consume() and vs redis-benchmark running the same script pipelined; one check at a time (p50) vs a bare ioredis
 * round trip; a 4-rule policy vs a 1-rule policy; the Redis load the denial cache saves under an abuser; and the
 * memory one tracked client costs in Redis, per algorithm (MEMORY USAGE). Prints markdown tables.
 * The throughput measures run with two ioredis settings, the same for ratekeeper and rate-limiter-flexible (the
 * defaults, and enableAutoPipelining), nothing refused, alternating over BENCH_ROUNDS rounds (best of each shown),
 * with the CPU each check costs in Node and in redis-server beside the rate.
 * `npm run bench redis` (or node dist/bench/redis.js; BENCH_PARTS=speed,log,memory,hotkey chooses the parts). Numbers are noisy on a shared machine: check the load average.
 * With BENCH_BASE=<another checkout> (bench/base.ts) the speed part also runs that build's 1-rule and 4-rule
 * policies (its public redisStore on the same client) in the same rounds, and the one-at-a-time p50 interleaved with
 * this build's: this build / base per round, median and spread.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { limiter, type Limiter } from '../src/limiter.js';
import { rules } from '../src/core/rules.js';
import type { RuleConfig } from '../src/core/algorithms/common.js';
import type { Algorithm } from '../src/core/types.js';
import { RedisStore, type RedisBound } from '../src/stores/redis/index.js';
import { policyScript } from '../src/stores/redis/scripts.js';
import { RedisServer } from '../test/support/redis.js';
import { afterBefore, BASE, BASE_NAME, baseHeading, baseImport } from './base.js';

const INFLIGHT = 256;
const KEYS = 10_000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
/** ROUNDS — every throughput measure is repeated this many times, the measures alternating; the best of each is shown. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/**
 * PARTS — the parts to run (BENCH_PARTS): speed (throughput, one at a time, the denial cache), log (the sliding log's
 * length), memory; `local` (not run by default): the local-first mode against the memory store (docs/fleet.md).
 */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'speed,log,memory').split(','));

/** Usage — what one measure cost: checks per second, and CPU µs per check on the Node side and in redis-server. */
interface Usage {
  rate: number;
  node: number;
  redis: number;
  /** script — µs per EVALSHA inside Redis (INFO commandstats usec_per_call). */
  script: number;
  /** refused — checks that were not admitted (the comparison is of admissions only: it must be 0). */
  refused: number;
  /** checks, calls — checks measured, and EVALSHA commands Redis ran meanwhile. */
  checks: number;
  calls: number;
}

function redisCpu(): number {
  const t = server.cli('INFO', 'cpu');
  return Number(/used_cpu_sys:([\d.]+)/.exec(t)?.[1]) + Number(/used_cpu_user:([\d.]+)/.exec(t)?.[1]);
}

/** throughput — calls per second of `fn` with `inflight` calls always in flight, after a short warm-up, with its CPU cost. */
async function throughput(fn: (i: number) => Promise<boolean>, inflight = INFLIGHT, seconds = SECONDS, warm = 400): Promise<Usage> {
  let refused = 0;
  const loop = async (ms: number): Promise<number> => {
    let count = 0;
    const end = performance.now() + ms;
    await Promise.all(Array.from({ length: inflight }, async (_, w) => {
      for (let i = w; performance.now() < end; i += inflight) {
        if (!(await fn(i))) refused++;
        count++;
      }
    }));
    return count;
  };
  await loop(warm);
  refused = 0;
  server.cli('CONFIG', 'RESETSTAT');
  const r0 = redisCpu();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const n = await loop(seconds * 1000);
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  const r1 = redisCpu();
  const stats = /cmdstat_evalsha:calls=(\d+)[^\n]*usec_per_call=([\d.]+)/.exec(server.cli('INFO', 'commandstats'));
  return { rate: n / elapsed, node: (cpu.user + cpu.system) / n, redis: ((r1 - r0) * 1e6) / n, script: Number(stats?.[2] ?? NaN), refused, checks: n, calls: Number(stats?.[1] ?? 0) };
}

/** best — the best round of a measure (the highest rate). */
const best = (runs: Usage[]): Usage => runs.reduce((a, b) => (b.rate > a.rate ? b : a));

/** p50s — median latencies in µs of several calls made one at a time, interleaved (a, b, c, a, b, c …) so that each sees the same machine. */
async function p50s(fns: ((i: number) => Promise<unknown>)[], n = 10_000): Promise<number[]> {
  for (let i = 0; i < 1_000; i++) for (const fn of fns) await fn(i);
  const lat = fns.map(() => new Float64Array(n));
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < fns.length; f++) {
      const t = performance.now();
      await fns[f](i);
      lat[f][i] = performance.now() - t;
    }
  }
  return lat.map((l) => {
    l.sort();
    return l[n >> 1] * 1000;
  });
}

const fmt = (x: number): string => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(1));
const ratio = (a: number, b: number): string => `${(a / b).toFixed(2)}×`;
const cost = (u: Usage): string => `${u.node.toFixed(1)} / ${u.redis.toFixed(1)} / ${u.script.toFixed(1)}`;

const loadBefore = loadavg().map((x) => x.toFixed(2)).join(' ');
const server = await RedisServer.start();
const options = { host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 };
const version = server.cli('INFO', 'server').match(/redis_version:(\S+)/)?.[1];
// Nothing is refused in the throughput measures (every check does the same read, decision and write): 10 000 keys
// and limits far above what one key gets in a few seconds.
const one = [rules.gcra({ limit: 1000, per: '1s', name: 'gcra' })];
/** fourRules — two sliding logs (one log, two windows), a token bucket and EARRRL: every key's log holds what it got in the last minute. */
const fourRules = [
  rules.slidingLog({ limit: 1_000_000, per: '1s', name: 'log1s' }), rules.slidingLog({ limit: 10_000_000, per: '1m', name: 'log1m' }),
  rules.tokenBucket({ limit: 100_000, per: '1m', name: 'bucket' }), rules.earrrl({ limit: 1_000_000, per: '1m', halfLife: '10s', name: 'earrrl', accounting: 'leaky' }),
];
const key = (i: number): string => `user:${i % KEYS}`;
/** memoryFour — the 4-rule policy of the memory table (a log of 20 requests per client). */
const memoryFour = [
  rules.gcra({ limit: 1000, per: '1s', name: 'gcra' }), rules.slidingLog({ limit: 100, per: '1m', name: 'log' }),
  rules.earrrl({ limit: 3000, per: '1m', halfLife: '10s', name: 'earrrl', accounting: 'leaky' }), rules.fixedWindow({ limit: 10_000, per: '1h', name: 'window' }),
];

/** Setting — one ioredis client setting, the same for ratekeeper and RateLimiterRedis. */
interface Setting {
  name: string;
  client: Redis;
  lim1: Limiter;
  lim4: Limiter;
  rlf: RateLimiterRedis;
}
const settings: Setting[] = [false, true].map((auto, k) => {
  const client = new Redis({ ...options, enableAutoPipelining: auto });
  const store = new RedisStore({ client, prefix: `bench${k}:` });
  return {
    name: auto ? 'enableAutoPipelining: true' : 'ioredis defaults (no auto-pipelining)',
    client, lim1: limiter({ rules: one, store }), lim4: limiter({ rules: fourRules, store }),
    rlf: new RateLimiterRedis({ storeClient: client, points: 1000, duration: 1, keyPrefix: `rlf${k}` }),
  };
});
const client = settings[0].client;
const store = new RedisStore({ client, prefix: 'bench:' });

if (PARTS.has('speed')) {
  // redis-benchmark runs the very script of the 1-rule policy as the store sends it (no ARGV: Redis TIME, cost 1),
  // pipelined: 16 connections × 16.
  const lim1 = settings[0].lim1;
  const bound = store.attach(lim1.policy) as RedisBound;
  const script = policyScript(lim1.policy);
  await client.script('LOAD', script.text);
  function redisBenchmark(): Usage {
    server.cli('CONFIG', 'RESETSTAT');
    const r0 = redisCpu();
    const n = Math.round(150_000 * SECONDS);
    const r = spawnSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(server.port), '-c', '16', '-P', '16', '-n', String(n), '-r', String(KEYS), '--csv',
      'EVALSHA', script.sha, '1', bound.redisKey('rb:__rand_int__')], { encoding: 'utf8' });
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    const rate = Number(line.split(',')[1]?.replace(/"/g, ''));
    if (!(rate > 0)) throw new Error(`redis-benchmark: ${r.stdout}${r.stderr}`);
    const usec = Number(/cmdstat_evalsha:[^\n]*usec_per_call=([\d.]+)/.exec(server.cli('INFO', 'commandstats'))?.[1] ?? NaN);
    return { rate, node: NaN, redis: ((redisCpu() - r0) * 1e6) / n, script: usec, refused: 0, checks: n, calls: n };
  }

  const check = (lim: Limiter) => async (i: number): Promise<boolean> => (await lim.check(key(i))).allowed;
  /** baseLims — with BENCH_BASE, the base build's 1-rule and 4-rule limiters on the ioredis-defaults client. */
  let baseLims: { one: Limiter; four: Limiter } | undefined;
  if (BASE !== undefined) {
    const b = await baseImport<{ limiter: typeof limiter; rules: typeof rules }>('src/index.js');
    const { redisStore } = await baseImport<{ redisStore: (o: { client: Redis; prefix: string }) => RedisStore }>('src/stores/redis/index.js');
    const bStore = redisStore({ client, prefix: 'base0:' });
    const bOne = [b.rules.gcra({ limit: 1000, per: '1s', name: 'gcra' })];
    const bFour = [
      b.rules.slidingLog({ limit: 1_000_000, per: '1s', name: 'log1s' }), b.rules.slidingLog({ limit: 10_000_000, per: '1m', name: 'log1m' }),
      b.rules.tokenBucket({ limit: 100_000, per: '1m', name: 'bucket' }), b.rules.earrrl({ limit: 1_000_000, per: '1m', halfLife: '10s', name: 'earrrl', accounting: 'leaky' }),
    ];
    baseLims = { one: b.limiter({ rules: bOne, store: bStore }), four: b.limiter({ rules: bFour, store: bStore }) };
  }
  const baseRuns = { one: [] as Usage[], four: [] as Usage[] };
  const consume = (rlf: RateLimiterRedis) => (i: number): Promise<boolean> => rlf.consume(key(i)).then(() => true, () => false);
  const results = settings.map(() => ({ one: [] as Usage[], rlf: [] as Usage[], four: [] as Usage[] }));
  const rb: Usage[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, s] of settings.entries()) {
      results[k].one.push(await throughput(check(s.lim1)));
      results[k].rlf.push(await throughput(consume(s.rlf)));
      results[k].four.push(await throughput(check(s.lim4)));
      if (k === 0 && baseLims !== undefined) {
        baseRuns.one.push(await throughput(check(baseLims.one)));
        baseRuns.four.push(await throughput(check(baseLims.four)));
      }
    }
    rb.push(redisBenchmark());
  }
  // the mean length of the 4-rule policy's logs at the end (n in the log's header: after 'n', 4 numbers of state, 3 doubles and off)
  const logKeys = Array.from({ length: 50 }, (_, i) => (settings[0].lim4.store as RedisStore).attach(settings[0].lim4.policy).redisKey(key(i * 19)));
  const heads = await Promise.all(logKeys.map((k) => client.getrangeBuffer(k, 61, 64)));
  const entries = heads.reduce((a, b) => a + (b.length === 4 ? b.readUInt32LE(0) : 0), 0) / heads.length;

  const [get, ping, single] = await p50s([() => client.get('nothing'), () => client.ping(), (i) => lim1.check(key(i))]);
  const [getAuto, singleAuto] = await p50s([() => settings[1].client.get('nothing'), (i) => settings[1].lim1.check(key(i))]);
  // with BENCH_BASE: this build's and the base's check() one at a time, interleaved, in ROUNDS rounds of 2 000
  const singles = { ours: [] as number[], base: [] as number[] };
  if (baseLims !== undefined) {
    for (let r = 0; r < ROUNDS; r++) {
      const [o, b] = await p50s([(i) => lim1.check(key(i)), (i) => baseLims.one.check(key(i))], 2000);
      singles.ours.push(o);
      singles.base.push(b);
    }
  }
  const rbBest = best(rb);

  const rows: string[] = [];
  console.log(`Redis ${version} on loopback, Node ${process.version}, ${SECONDS} s per measure, best of ${ROUNDS} alternating rounds, ${KEYS} keys, ${INFLIGHT} in flight; load average before: ${loadBefore}, after: ${loadavg().map((x) => x.toFixed(2)).join(' ')}.`);
  console.log('CPU columns: µs per check in Node / in redis-server (all of its threads) / inside the script (INFO commandstats, EVALSHA usec_per_call).\n');
  rows.push('| ioredis client | measure | ratekeeper | reference | ratio | target | ratekeeper CPU µs: node / redis / script | reference CPU µs |', '|---|---|---:|---:|---:|---|---|---|');
  for (const [k, s] of settings.entries()) {
    const r = results[k];
    const o = best(r.one);
    const t = best(r.rlf);
    const f = best(r.four);
    const refused = [...r.one, ...r.rlf, ...r.four].reduce((a, u) => a + u.refused, 0);
    if (refused > 0) console.log(`(${s.name}: ${refused} checks were refused during the throughput measures: the comparison is not of admissions only)`);
    rows.push(`| ${s.name} | 256 in flight, checks/s (1 rule) vs RateLimiterRedis.consume() | ${fmt(o.rate)} | ${fmt(t.rate)} | ${ratio(o.rate, t.rate)} | >= 1.5× | ${cost(o)} | ${cost(t)} |`);
    if (k === 0) rows.push(`| | 256 in flight, checks/s vs redis-benchmark, same script, -c 16 -P 16 | ${fmt(o.rate)} | ${fmt(rbBest.rate)} | ${ratio(o.rate, rbBest.rate)} | report | | – / ${rbBest.redis.toFixed(1)} / ${rbBest.script.toFixed(1)} |`);
    rows.push(`| ${s.name} | 4 rules (slidingLog 1s and 1m over one log of ${k === 0 ? `${entries.toFixed(0)} entries at the end` : 'the same keys'}, tokenBucket, earrrl) vs 1 rule, checks/s | ${fmt(f.rate)} | ${fmt(o.rate)} | ${ratio(f.rate, o.rate)} | >= 0.7× | ${cost(f)} | |`);
  }
  rows.push(`| ioredis defaults | one at a time, p50 µs vs bare ioredis GET (PING: ${fmt(ping)} µs) | ${fmt(single)} | ${fmt(get)} | ${ratio(single, get)} | <= 1.2× | | |`);
  rows.push(`| enableAutoPipelining: true | one at a time, p50 µs vs bare ioredis GET | ${fmt(singleAuto)} | ${fmt(getAuto)} | ${ratio(singleAuto, getAuto)} | <= 1.2× | | |`);
  console.log(rows.join('\n'));
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const roundRatios = (a: Usage[], b: Usage[]): number[] => a.map((u, i) => u.rate / b[i].rate);
  for (const [k, s] of settings.entries()) {
    const r = results[k];
    const vsRlf = roundRatios(r.one, r.rlf);
    const fourVsOne = roundRatios(r.four, r.one);
    console.log(`\n${s.name}, ratio within each round (same machine state): 1 rule / RateLimiterRedis ${vsRlf.map((x) => x.toFixed(2)).join(', ')} (median ${median(vsRlf).toFixed(2)}×); 4 rules / 1 rule ${fourVsOne.map((x) => x.toFixed(2)).join(', ')} (median ${median(fourVsOne).toFixed(2)}×).`);
  }
  if (baseLims !== undefined) {
    console.log(baseHeading('ioredis defaults, 256 in flight checks/s, and one at a time p50 as a speed (the base\'s µs / this build\'s)'));
    console.log('| measure | this build / base |\n|---|---:|');
    console.log(`| 1 rule, checks/s | ${afterBefore(results[0].one.map((u) => u.rate), baseRuns.one.map((u) => u.rate))} |`);
    console.log(`| 4 rules, checks/s | ${afterBefore(results[0].four.map((u) => u.rate), baseRuns.four.map((u) => u.rate))} |`);
    console.log(`| 1 rule, Node CPU per check | ${afterBefore(baseRuns.one.map((u) => u.node), results[0].one.map((u) => u.node))} |`);
    console.log(`| 1 rule, one at a time p50 (${BASE_NAME}: ${singles.base.map(fmt).join(', ')} µs) | ${afterBefore(singles.base, singles.ours)} |`);
  }
  console.log(`\nAll rounds, checks/s: ${settings.map((s, k) => `${s.name}: 1 rule ${results[k].one.map((u) => fmt(u.rate)).join(', ')}; RateLimiterRedis ${results[k].rlf.map((u) => fmt(u.rate)).join(', ')}; 4 rules ${results[k].four.map((u) => fmt(u.rate)).join(', ')}`).join(' | ')}; redis-benchmark ${rb.map((u) => fmt(u.rate)).join(', ')}.`);

  // The denial cache under an abuser: one key far over its limit, 256 requests in flight.
  const abuse = async (lim: Limiter): Promise<[number, number]> => {
    const u = await throughput(async () => (await lim.check('abuser')).allowed, INFLIGHT, SECONDS);
    return [u.rate, u.calls / u.checks];
  };
  const abuseRules = (): RuleConfig[] => [rules.gcra({ limit: 10, per: '1s' })];
  const [plainRate, plainPer] = await abuse(limiter({ rules: abuseRules(), store }));
  const cachedLim = limiter({ rules: abuseRules(), store, denialCache: true });
  const [cachedRate, cachedPer] = await abuse(cachedLim);
  console.log('\nDenial cache, one abuser over gcra 10/s, 256 requests in flight:\n');
  console.log('| | checks/s | EVALSHA per check |\n|---|---:|---:|');
  console.log(`| without cache | ${fmt(plainRate)} | ${plainPer.toFixed(4)} |`);
  console.log(`| denialCache: true | ${fmt(cachedRate)} | ${cachedPer.toFixed(4)} |`);

}

if (PARTS.has('log')) {
  // The sliding log's length: a check on a key whose log holds 20 000 requests vs one whose log holds 200, at the
  // steady state (one request per ms over a window of n ms: each check files one and trims one), explicit times, one
  // at a time, the two lengths alternating over the rounds. Redis's time per check (usec_per_call) is what a long log
  // would take from every other client.
  const LOG_KEYS = 8;
  const logBench = [200, 20_000].map((n) => {
    const lim = limiter({ rules: [rules.slidingLog({ limit: 10 * n, per: n })], store: new RedisStore({ client, prefix: `loglen${n}:` }) });
    return { n, lim, clocks: new Float64Array(LOG_KEYS).fill(1_800_000_000_000), p50: [] as number[], script: [] as number[], bytes: 0 };
  });
  for (const b of logBench) {
    for (let k = 0; k < LOG_KEYS; k++) {
      for (let i = 0; i < b.n + 10; i += 1000) {
        await Promise.all(Array.from({ length: Math.min(1000, b.n + 10 - i) }, () => b.lim.check(`k${k}`, { now: ++b.clocks[k] })));
      }
    }
    b.bytes = (await Promise.all(Array.from({ length: LOG_KEYS }, (_, k) => client.strlen((b.lim.store as RedisStore).attach(b.lim.policy).redisKey(`k${k}`))))).reduce((x, y) => x + y, 0) / LOG_KEYS;
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const b of logBench) {
      server.cli('CONFIG', 'RESETSTAT');
      const lat = new Float64Array(4000);
      for (let i = 0; i < lat.length; i++) {
        const k = i % LOG_KEYS;
        const t = performance.now();
        const d = await b.lim.check(`k${k}`, { now: ++b.clocks[k] });
        lat[i] = performance.now() - t;
        if (!d.allowed) throw new Error('the log bench must not be refused');
      }
      lat.sort();
      b.p50.push(lat[lat.length >> 1] * 1000);
      b.script.push(Number(/cmdstat_evalsha:[^\n]*usec_per_call=([\d.]+)/.exec(server.cli('INFO', 'commandstats'))?.[1] ?? NaN));
    }
  }
  const [short, long] = logBench;
  const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log('\nSliding log, one check at a time (explicit now), a log of 20 000 requests vs one of 200 (median of rounds):\n');
  console.log('| log | value, bytes (per entry) | p50 µs per check | Redis µs per check (usec_per_call) |\n|---|---:|---:|---:|');
  for (const b of logBench) console.log(`| ${b.n.toLocaleString('en-US')} requests | ${Math.round(b.bytes).toLocaleString('en-US')} (${(b.bytes / b.n).toFixed(1)}) | ${fmt(med(b.p50))} | ${med(b.script).toFixed(2)} |`);
  console.log(`| ratio 20 000 / 200 | | ${ratio(med(long.p50), med(short.p50))} | ${ratio(med(long.script), med(short.script))} (target <= 1.5×) |`);
  console.log(`Rounds: p50 ${logBench.map((b) => `${b.n}: ${b.p50.map(fmt).join(', ')}`).join('; ')}; script µs ${logBench.map((b) => `${b.n}: ${b.script.map((x) => x.toFixed(2)).join(', ')}`).join('; ')}.`);

}

if (PARTS.has('memory')) {
  // Memory per tracked client, per algorithm: MEMORY USAGE of one client's key, and used_memory over CLIENTS clients
  // checked on the server's clock (as an application's checks are), beside RateLimiterRedis's counter in the same run;
  // the one-number rows again under maxmemory-policy allkeys-lru, where Redis shares no small integer.
  const CLIENTS = Number(process.env.BENCH_MEM_CLIENTS ?? 50_000);
  const algorithms: Algorithm[] = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'];
  // 30 per hour: a state of one request lasts 2 minutes, so no key expires while a slow machine is still checking the
  // 50 000 (at 30 per minute the first keys of a gcra or bucket run expired after 2 s, and the figures came out low)
  const ruleOf = (a: Algorithm): RuleConfig => a === 'earrrl' ? rules.earrrl({ limit: 30, per: '1h', halfLife: '10m' }) : (rules[a] as (o: { limit: number; per: string }) => RuleConfig)({ limit: 30, per: '1h' });
  console.log(`\nMemory per tracked client (one string key; \`MEMORY USAGE key SAMPLES 0\` and the growth of used_memory over ${CLIENTS.toLocaleString('en-US')} clients checked on the server's clock, ${(CLIENTS / 10).toLocaleString('en-US')} for the 20-request logs), jemalloc, 64-bit, client keys \`client:N\`, ratekeeper's prefix \`rk:\`, RateLimiterRedis's \`rlflx:\`:\n`);
  console.log('| policy | MEMORY USAGE of one key, bytes | used_memory / client, bytes | the same under allkeys-lru |\n|---|---:|---:|---:|');
  const usedMemory = (): number => Number(/used_memory:(\d+)/.exec(server.cli('INFO', 'memory'))?.[1]);
  /** MemRow — id: the limiter's id (keys named by it and the layout, as the service's: gcra keeps its interval too). */
  type MemRow = [name: string, list: RuleConfig[] | 'rlflx', per: number, lru: boolean, id?: string];
  const memRows: MemRow[] = [
    ...algorithms.map((a): MemRow => [a === 'slidingLog' ? 'slidingLog, 1 request in the log' : a, [ruleOf(a)], 1, a === 'gcra']),
    ['gcra with an id (the service\'s limits)', [ruleOf('gcra')], 1, false, 'api'],
    ['tokenBucket with an id', [ruleOf('tokenBucket')], 1, false, 'api'],
    ['slidingLog, 20 requests in the log', [ruleOf('slidingLog')], 20, false],
    ['4 rules (gcra, slidingLog ×20, earrrl, fixedWindow)', memoryFour, 20, false],
    ['RateLimiterRedis (a counter)', 'rlflx', 1, true],
  ];
  /** perClient — used_memory's growth per client when `clients` clients are checked `per` times each, 256 in flight. */
  async function perClient(check: (key: string) => Promise<unknown>, clients: number, per: number): Promise<number> {
    server.cli('FLUSHALL');
    const m0 = usedMemory();
    let next = 0;
    await Promise.all(Array.from({ length: 256 }, async () => {
      for (let i = next++; i < clients; i = next++) for (let k = 0; k < per; k++) await check(`client:${i}`);
    }));
    return (usedMemory() - m0) / clients;
  }
  for (const [name, list, per, lru, id] of memRows) {
    const clients = per > 1 ? CLIENTS / 10 : CLIENTS;
    let check: (key: string) => Promise<unknown>;
    let keyName: string;
    if (list === 'rlflx') {
      const rlf = new RateLimiterRedis({ storeClient: client, points: 1e9, duration: 60, keyPrefix: 'rlflx' });
      check = (k) => rlf.consume(k);
      keyName = 'rlflx:client:7';
    } else {
      const lim = limiter({ rules: list, store: new RedisStore({ client, prefix: 'rk:' }), id });
      check = (k) => lim.check(k);
      keyName = (lim.store.attach(lim.policy) as RedisBound).redisKey('client:7');
    }
    const bytes = await perClient(check, clients, per);
    const usage = await client.call('MEMORY', 'USAGE', keyName, 'SAMPLES', '0');
    let underLru = '';
    if (lru) {
      server.cli('CONFIG', 'SET', 'maxmemory', '8gb');
      server.cli('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
      underLru = String(Math.round(await perClient(check, clients, per)));
      server.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
      server.cli('CONFIG', 'SET', 'maxmemory', '0');
    }
    console.log(`| ${name} | ${usage} | ${Math.round(bytes)} | ${underLru} |`);
  }
  server.cli('FLUSHALL');
}

if (PARTS.has('local') || PARTS.has('locallog')) {
  // the local-first mode (docs/fleet.md) beside the memory store's check(), one check at a time, the two
  // interleaved per check in every round (BENCH_ROUNDS): p50 per round, median and spread over rounds; script calls
  // (EVALSHA + EVAL, INFO commandstats) per check. The event loop is given a turn every 64 checks (unmeasured), as a
  // server's I/O gives it: the flushes' replies and timers run there.
  const { memoryStore } = await import('../src/stores/memory.js');
  const calls = (): number => [...server.cli('INFO', 'commandstats').matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
  const turn = (): Promise<void> => new Promise((r) => setImmediate(r));
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  /** rounds — per round, p50 (µs) of each of `fns` over `n` checks of key(i), interleaved; and the script calls per check of fns[0]. */
  async function rounds(fns: ((i: number) => Promise<unknown>)[], n: number, key0: number): Promise<{ p50: number[][]; perCheck: number[] }> {
    const p50: number[][] = fns.map(() => []);
    const perCheck: number[] = [];
    let base = key0;
    for (let r = 0; r < ROUNDS; r++) {
      const lat = fns.map(() => new Float64Array(n));
      const c0 = calls();
      for (let i = 0; i < n; i++) {
        for (let f = 0; f < fns.length; f++) {
          const t = performance.now();
          await fns[f](base + i);
          lat[f][i] = performance.now() - t;
        }
        if ((i & 63) === 63) await turn();
      }
      await new Promise((res) => setTimeout(res, 50));
      perCheck.push((calls() - c0) / n);
      base += n;
      lat.forEach((l, f) => {
        l.sort();
        p50[f].push(l[n >> 1] * 1000);
      });
    }
    return { p50, perCheck };
  }
  const spread = (xs: number[]): string => `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`;
  const hot = [rules.gcra({ limit: 1e9, per: '1s', name: 'gcra' })];
  if (PARTS.has('local')) {
    console.log(`\n### Local-first mode (${ROUNDS} rounds, one check at a time; p50 µs: median (min–max) over rounds)\n`);
    console.log('| measure | local-first p50 | memory store p50 | ratio | script calls per check | bound |\n|---|---:|---:|---:|---:|---:|');
    /** syncCost — per maxUnsynced, Redis's µs per sync call (INFO commandstats usec_per_call of EVALSHA): its CPU per check is that / maxUnsynced. */
    const syncCost: [number, number][] = [];
    for (const m of [5, 20, 100]) {
      const lf = new RedisStore({ client, prefix: `benchlf${m}:`, localFirst: { maxUnsynced: m, flushEvery: '20ms' } });
      const limLf = limiter({ rules: hot, store: lf });
      const limMem = limiter({ rules: hot, store: memoryStore() });
      server.cli('CONFIG', 'RESETSTAT');
      const r = await rounds([() => limLf.check('hot'), () => limMem.check('hot')], 20_000, 0);
      const ratios = r.p50[0].map((x, i) => x / r.p50[1][i]);
      console.log(`| hot key, maxUnsynced ${m} | ${spread(r.p50[0])} | ${spread(r.p50[1])} | ${median(ratios).toFixed(2)}× | ${median(r.perCheck).toFixed(4)} | ${(1 / m).toFixed(4)} |`);
      syncCost.push([m, Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(server.cli('INFO', 'commandstats'))?.[1])]);
      await lf.close();
    }
    {
      // 100 000 cold keys, each checked once per round (cold: 'fresh': no round trip), flushEvery 20 ms
      const KEYS_COLD = 100_000;
      const lf = new RedisStore({ client, prefix: 'benchlfc:', localFirst: { maxUnsynced: 5, flushEvery: '20ms', cold: 'fresh', maxKeys: 200_000 } });
      const limLf = limiter({ rules: hot, store: lf });
      const limMem = limiter({ rules: hot, store: memoryStore({ maxKeys: 200_000 }) });
      const t0 = performance.now();
      const r = await rounds([(i) => limLf.check(`cold:${i % KEYS_COLD}`), (i) => limMem.check(`cold:${i % KEYS_COLD}`)], KEYS_COLD, 0);
      const seconds = (performance.now() - t0) / 1000;
      const ratios = r.p50[0].map((x, i) => x / r.p50[1][i]);
      const s = lf.localFirstStats();
      // calls per key per flushEvery: each key is checked once per round, so it is due once per round at most
      console.log(`| 100 000 cold keys, cold: 'fresh' | ${spread(r.p50[0])} | ${spread(r.p50[1])} | ${median(ratios).toFixed(2)}× | ${median(r.perCheck).toFixed(4)} (${s?.flushes} clients synced in ${s?.calls} calls, ${((s?.flushes ?? 0) / (s?.calls || 1)).toFixed(0)} per call, ${seconds.toFixed(1)} s) | <= 1 per key per flushEvery |`);
      await lf.close();
    }
    console.log('\n| maxUnsynced | Redis µs per sync call (one hot key) | Redis µs per check | hot-key checks/s one master sustains (1e6 / µs per check) |\n|---:|---:|---:|---:|');
    for (const [m, us] of syncCost) console.log(`| ${m} | ${us.toFixed(1)} | ${(us / m).toFixed(2)} | ${fmt(1e6 / (us / m))} |`);
  }
  if (PARTS.has('locallog')) {
    // the sliding log on one hot key (1e9 per second: nothing refused; ~1 000 entries of 1 ms each in the window,
    // every sync returns them): local-first beside the memory store, then the exact mode beside the memory store
    const log = [rules.slidingLog({ limit: 1e9, per: '1s', name: 'log' })];
    console.log(`\n### Local-first mode, a sliding log of 1e9/1s on one hot key (${ROUNDS} rounds, one check at a time; p50 µs: median (min–max) over rounds)\n`);
    console.log('| measure | p50 | memory store p50 | ratio | script calls per check | Redis µs per script call | Redis µs per check |\n|---|---:|---:|---:|---:|---:|---:|');
    const row = async (what: string, store: RedisStore): Promise<void> => {
      const limLog = limiter({ rules: log, store });
      const limMem = limiter({ rules: log, store: memoryStore() });
      server.cli('CONFIG', 'RESETSTAT');
      const r = await rounds([() => limLog.check('hot'), () => limMem.check('hot')], 20_000, 0);
      const ratios = r.p50[0].map((x, i) => x / r.p50[1][i]);
      const us = Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(server.cli('INFO', 'commandstats'))?.[1]);
      const per = median(r.perCheck);
      console.log(`| ${what} | ${spread(r.p50[0])} | ${spread(r.p50[1])} | ${median(ratios).toFixed(2)}× | ${per.toFixed(4)} | ${us.toFixed(1)} | ${(us * per).toFixed(2)} |`);
      await store.close();
    };
    for (const m of [5, 20, 100]) await row(`local-first, maxUnsynced ${m}`, new RedisStore({ client, prefix: `benchll${m}:`, localFirst: { maxUnsynced: m, flushEvery: '20ms' } }));
    await row('the exact mode', new RedisStore({ client, prefix: 'benchllx:' }));
  }
  server.cli('FLUSHALL');
}

if (PARTS.has('hotkey')) {
  // issue 19 part 1: one hot key at 256 in flight, the checks of one tick coalesced into one script call (batch: true,
  // the default) against today's exact mode (batch: false), alternating rounds; and 10 000 distinct keys, the same
  // two, for no regression. Median and spread (min–max) of the rounds.
  const hot = [rules.gcra({ limit: 1e9, per: '1s', burst: 1e9, name: 'gcra' })];
  const on = new RedisStore({ client, prefix: 'hot-on:' });
  const off = new RedisStore({ client, prefix: 'hot-off:', batch: false });
  const limOn = limiter({ rules: hot, store: on });
  const limOff = limiter({ rules: hot, store: off });
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const line = (name: string, a: Usage[], b: Usage[]): void => {
    const ra = a.map((u) => u.rate);
    const rb = b.map((u) => u.rate);
    // CPU per check (Node's and Redis's, µs): steadier than checks/s on a shared machine
    const cpu = (us: Usage[]): string => `${median(us.map((u) => u.node)).toFixed(2)} + ${median(us.map((u) => u.redis)).toFixed(2)}`;
    const total = (us: Usage[]): number => median(us.map((u) => u.node + u.redis));
    console.log(`| ${name} | ${fmt(median(rb))} (${fmt(Math.min(...rb))}–${fmt(Math.max(...rb))}) | ${fmt(median(ra))} (${fmt(Math.min(...ra))}–${fmt(Math.max(...ra))}) | ${ratio(median(ra), median(rb))} | ${cpu(b)} | ${cpu(a)} | ${(total(b) / total(a)).toFixed(2)}× | ${(a.reduce((x, u) => x + u.calls, 0) / a.reduce((x, u) => x + u.checks, 0)).toFixed(4)} | ${a.reduce((x, u) => x + u.refused, 0) + b.reduce((x, u) => x + u.refused, 0)} |`);
  };
  console.log(`\n## Hot keys coalesced (${INFLIGHT} in flight, ${ROUNDS} alternating rounds of ${SECONDS} s; median (min–max) checks/s)\n`);
  console.log('| load | batch: false (today) | batch: true | ratio | CPU µs/check Node + Redis, false | true | CPU ratio | script calls per check (batched) | refused |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const [name, k] of [['one hot key', (_: number) => 'hot'], ['10 000 distinct keys', key]] as const) {
    const a: Usage[] = [];
    const b: Usage[] = [];
    const s0 = { ...on.batcher!.stats };
    for (let r = 0; r < ROUNDS; r++) {
      b.push(await throughput((i) => limOff.check(k(i)).then((d) => d.allowed)));
      a.push(await throughput((i) => limOn.check(k(i)).then((d) => d.allowed)));
    }
    line(name, a, b);
    const st = on.batcher!.stats;
    console.log(`|  batches: ${st.batches - s0.batches}, checks in them: ${st.checks - s0.checks}, mean size ${((st.checks - s0.checks) / Math.max(1, st.batches - s0.batches)).toFixed(1)}, largest ${st.largest} | | | | | | | | |`);
  }
  on.close();
  off.close();
  server.cli('FLUSHALL');
}

for (const s of settings) s.client.disconnect();
store.close();
await server.stop();
