/**
 * bench/server — the limiter service against its ceilings, side by side in one run (`npm run bench server`):
 * - from outside, the targets of issue 16 (bench/outside.ts): Debian's wrk against POST /v1/check, POST /json
 *   (2 descriptors) and GET /v1/auth of the service and of a bare node:http server sending the service's own bytes
 *   (captured first), and h2load against gRPC ShouldRateLimit and a bare grpc-js server; per-round ratios, and each
 *   server's CPU per request from /proc/<pid>/stat. Missing tools are installed with apt-get when root, else named;
 * - gRPC ShouldRateLimit (2 descriptors, memory store) vs a bare grpc-js server answering a constant
 *   RateLimitResponse (same proto): throughput with BENCH_STREAMS (64) calls in flight from this process;
 * - HTTP POST /v1/check and POST /json vs a bare node:http server that reads the body and answers a constant JSON;
 * - p50 and p99 of one call at a time, against the same ceilings;
 * - with Redis (a real redis-server): what the store adds to one call at a time in the service (its p50 on Redis
 *   minus on memory), beside what it adds to the library's own `check()` and `checkAll` of two limiters, and beside
 *   the floor: a bare grpc-js server making one Redis round trip (a GET; an EVALSHA of a two-key script) per call.
 * Every server runs in its own process, pinned to the last CPU (taskset), the load in this one on the others. In the
 * Redis part the library loops run in their own process on the servers' CPU too, and redis-server is pinned to the
 * load generator's CPUs: so every Redis round trip measured crosses CPUs the same way. (Started from this process,
 * redis-server would inherit its CPU; a library loop in this process then never leaves that CPU, while the
 * service's round trips cross twice, and on a VM whose idle CPUs halt each crossing is a wake-up through the
 * hypervisor — that made the service's Redis cost look 5–7× the library's. The table's last row keeps that
 * placement for comparison, and a column counts the CPUs' idle entries per call.)
 * Rounds alternate the servers; tables give each server's best round and every round. Limits are never reached:
 * the run fails if anything is refused. Environment: BENCH_SECONDS (3), BENCH_ROUNDS (3), BENCH_STREAMS (64),
 * BENCH_CONNECTIONS (64, HTTP), BENCH_SEQ (2000 calls one at a time), BENCH_PIN (1), BENCH_REDIS (1),
 * BENCH_PARTS (wrk,h2load,throughput,latency,redis); for wrk and h2load: BENCH_OUT_SECONDS (10), BENCH_OUT_ROUNDS (5),
 * BENCH_OUT_WARMUP (2), BENCH_H2_CLIENTS (8), BENCH_H2_STREAMS (8 per connection), BENCH_INSTALL (1: apt-get when
 * root). Temporary files (config, wrk script, gRPC frame) live in one rk-bench-* directory, removed on exit.
 * With BENCH_BASE=<another checkout> (bench/base.ts) the base build's service runs as one more server in every part,
 * in the same alternating rounds, and each part ends with a table of this build / base per round (median, min–max).
 * The server processes are bench/servers.ts; the wrk and h2load parts, bench/serverOutside.ts; the configuration
 * and requests, bench/fixture.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Grpc from '@grpc/grpc-js';
import { afterBefore, BASE, BASE_NAME, baseHeading, median } from './base.js';
import { checkBody, KEYS, rlsRequest } from './fixture.js';
import { outsideGrpc, outsideHttp } from './serverOutside.js';
import { LOAD_CPUS, PIN, SERVER_CPU, start, stop, type ServerKind } from './servers.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 64);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const SEQ = Number(process.env.BENCH_SEQ ?? 2000);

let grpcMod: typeof Grpc;
let Client: Grpc.ServiceClientConstructor;
async function grpcClient(port: number): Promise<Grpc.Client & { ShouldRateLimit: Function }> {
  grpcMod ??= await import('@grpc/grpc-js');
  Client ??= (await import('../src/server/grpc.js')).rlsClient();
  return new Client(`127.0.0.1:${port}`, grpcMod.credentials.createInsecure()) as unknown as Grpc.Client & { ShouldRateLimit: Function };
}

function call(c: { ShouldRateLimit: Function }, i: number): Promise<{ overall_code: string }> {
  return new Promise((res, rej) => c.ShouldRateLimit(rlsRequest(i), (e: Error | null, r: { overall_code: string }) => (e ? rej(e) : res(r))));
}

/** grpcLoad — calls per second with STREAMS calls in flight for `seconds`. */
async function grpcLoad(port: number, seconds: number): Promise<number> {
  const c = await grpcClient(port);
  let n = 0;
  let refused = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: STREAMS }, async (_, w) => {
    let i = w;
    while (performance.now() < end) {
      const r = await call(c, i);
      i += STREAMS;
      if (r.overall_code !== 'OK') refused++;
      n++;
    }
  }));
  c.close();
  if (refused > 0) throw new Error(`${refused} calls refused: the run is void`);
  return n / seconds;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** grpcSeq — p50 and p99 (µs) of one call at a time. */
/** seq — p50 and p99 (µs) of SEQ calls of `one` made one at a time, after 300 to warm up. */
async function seq(one: (i: number) => Promise<unknown>): Promise<[number, number]> {
  for (let i = 0; i < 300; i++) await one(i);
  const t: number[] = [];
  for (let i = 0; i < SEQ; i++) {
    const s = performance.now();
    await one(i);
    t.push((performance.now() - s) * 1000);
  }
  t.sort((a, b) => a - b);
  return [percentile(t, 0.5), percentile(t, 0.99)];
}

async function grpcSeq(port: number): Promise<[number, number]> {
  const c = await grpcClient(port);
  try {
    return await seq((i) => call(c, i));
  } finally {
    c.close();
  }
}

function httpBody(path: string, i: number): string {
  return path === '/json' ? JSON.stringify(rlsRequest(i)) : checkBody(i);
}

async function httpLoad(port: number, path: string, seconds: number): Promise<number> {
  const { default: autocannon } = await import('autocannon');
  let i = 0;
  const r = await autocannon({
    url: `http://127.0.0.1:${port}${path}`, connections: CONNECTIONS, duration: seconds,
    requests: [{ method: 'POST', path, headers: { 'content-type': 'application/json' }, setupRequest: (req) => ({ ...req, body: httpBody(path, i++) }) }],
  });
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) throw new Error(`${path}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts: the run is void`);
  return r.requests.total / seconds;
}

async function httpSeq(port: number, path: string): Promise<[number, number]> {
  const { request, Agent } = await import('node:http');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const one = (i: number): Promise<void> => new Promise((res, rej) => {
    const body = httpBody(path, i);
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (r) => {
      r.resume();
      r.on('end', () => (r.statusCode === 200 ? res() : rej(new Error(`${path}: ${r.statusCode}`))));
    });
    req.on('error', rej);
    req.end(body);
  });
  try {
    return await seq(one);
  } finally {
    agent.destroy();
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

async function throughput(): Promise<void> {
  const cases: { name: string; kind: ServerKind; base?: boolean; run: (s: { http: number; grpc: number }) => Promise<number> }[] = [
    { name: 'gRPC ShouldRateLimit, ratekeeper (2 descriptors)', kind: 'service', run: (s) => grpcLoad(s.grpc, SECONDS) },
    { name: 'gRPC, bare grpc-js constant response', kind: 'bare-grpc', run: (s) => grpcLoad(s.grpc, SECONDS) },
    { name: 'HTTP POST /v1/check, ratekeeper', kind: 'service', run: (s) => httpLoad(s.http, '/v1/check', SECONDS) },
    { name: 'HTTP POST /json, ratekeeper (2 descriptors)', kind: 'service', run: (s) => httpLoad(s.http, '/json', SECONDS) },
    { name: 'HTTP /v1/check, bare node:http constant answer of the same size', kind: 'bare-http', run: (s) => httpLoad(s.http, '/v1/check', SECONDS) },
    { name: 'HTTP /json, bare node:http constant answer of the same size', kind: 'bare-http', run: (s) => httpLoad(s.http, '/json', SECONDS) },
  ];
  /** AGAINST_BASE — with BENCH_BASE, each service case (0, 2, 3) and its twin on the base build, appended. */
  const AGAINST_BASE: [number, number][] = [];
  if (BASE !== undefined) {
    for (const j of [0, 2, 3]) {
      AGAINST_BASE.push([j, cases.length]);
      cases.push({ ...cases[j], name: cases[j].name.replace('ratekeeper', BASE_NAME), base: true });
    }
  }
  const runs = cases.map(() => [] as number[]);
  /** cpu — the server's CPU µs per call in each round (what the server itself spends, whatever limits the load). */
  const cpu = cases.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < cases.length; k++) {
      const j = (round + k) % cases.length;
      const s = await start(cases[j].kind, undefined, {}, cases[j].base);
      try {
        await cases[j].run(s).catch(() => 0); // warm-up
        s.child.send('start');
        const rate = await cases[j].run(s);
        const used = once(s.child, 'message');
        s.child.send('stop');
        const [micros] = (await used) as [number];
        runs[j].push(rate);
        cpu[j].push(micros / (rate * SECONDS));
      } finally {
        await stop(s.child);
      }
    }
    console.error(`throughput round ${round + 1}/${ROUNDS}: ${cases.map((c, j) => `${c.name} ${fmt(runs[j][round])}`).join('; ')}`);
  }
  const best = (j: number): number => Math.max(...runs[j]);
  /** PAIRS — each case, the case it is compared with (its ceiling: none for a ceiling) and the target. */
  const PAIRS: [number, number | undefined, string][] = [[0, 1, '>= 0.6×'], [1, undefined, 'ceiling'], [2, 4, '>= 0.7×'], [3, 5, '>= 0.7×'], [4, undefined, 'ceiling'], [5, undefined, 'ceiling']];
  console.log(`\n### Throughput (calls/s; ${SECONDS} s per run after a warm-up run, ${ROUNDS} alternating rounds; gRPC ${STREAMS} calls in flight, HTTP ${CONNECTIONS} connections)\n`);
  console.log('| server | best | median | rounds | vs its ceiling (best, median) | target |');
  console.log('|---|---:|---:|---|---:|---|');
  const row = (j: number, ceiling: number | undefined, target: string): void => {
    const ratio = ceiling === undefined ? '' : `${(best(j) / best(ceiling)).toFixed(2)}×, ${(median(runs[j]) / median(runs[ceiling])).toFixed(2)}×`;
    console.log(`| ${cases[j].name} | ${fmt(best(j))} | ${fmt(median(runs[j]))} | ${runs[j].map(fmt).join(' / ')} | ${ratio} | ${target} |`);
  };
  for (const [j, ceiling, target] of PAIRS) row(j, ceiling, target);
  console.log('\nThe servers\' own CPU per call (µs, user + system, median of rounds): what each server spends, whatever limits the load generator. Ratio: the ceiling\'s µs / this one\'s (as a throughput on one core).\n');
  console.log('| server | CPU µs per call (median) | rounds | vs its ceiling | target |');
  console.log('|---|---:|---|---:|---|');
  const cpuRow = (j: number, ceiling: number | undefined, target: string): void => {
    const ratio = ceiling === undefined ? '' : `${(median(cpu[ceiling]) / median(cpu[j])).toFixed(2)}×`;
    console.log(`| ${cases[j].name} | ${median(cpu[j]).toFixed(1)} | ${cpu[j].map((x) => x.toFixed(1)).join(' / ')} | ${ratio} | ${target} |`);
  };
  for (const [j, ceiling, target] of PAIRS) cpuRow(j, ceiling, target);
  if (AGAINST_BASE.length > 0) {
    console.log(baseHeading('throughput, and CPU per call as a speed (the base\'s µs / this build\'s)'));
    console.log('| server | calls/s | CPU per call |\n|---|---:|---:|');
    for (const [j, b] of AGAINST_BASE) console.log(`| ${cases[j].name} | ${afterBefore(runs[j], runs[b])} | ${afterBefore(cpu[b], cpu[j])} |`);
  }
}

async function latency(): Promise<void> {
  const cases: { name: string; kind: ServerKind; base?: boolean; run: (s: { http: number; grpc: number }) => Promise<[number, number]> }[] = [
    { name: 'gRPC, ratekeeper', kind: 'service', run: (s) => grpcSeq(s.grpc) },
    { name: 'gRPC, bare', kind: 'bare-grpc', run: (s) => grpcSeq(s.grpc) },
    { name: 'HTTP /v1/check, ratekeeper', kind: 'service', run: (s) => httpSeq(s.http, '/v1/check') },
    { name: 'HTTP /json, ratekeeper', kind: 'service', run: (s) => httpSeq(s.http, '/json') },
    { name: 'HTTP /v1/check, bare', kind: 'bare-http', run: (s) => httpSeq(s.http, '/v1/check') },
    { name: 'HTTP /json, bare', kind: 'bare-http', run: (s) => httpSeq(s.http, '/json') },
  ];
  /** AGAINST_BASE — with BENCH_BASE, each service case (0, 2, 3) and its twin on the base build, appended. */
  const AGAINST_BASE: [number, number][] = [];
  if (BASE !== undefined) {
    for (const j of [0, 2, 3]) {
      AGAINST_BASE.push([j, cases.length]);
      cases.push({ ...cases[j], name: cases[j].name.replace('ratekeeper', BASE_NAME), base: true });
    }
  }
  const runs = cases.map(() => [] as [number, number][]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < cases.length; k++) {
      const j = (round + k) % cases.length;
      const s = await start(cases[j].kind, undefined, {}, cases[j].base);
      try {
        runs[j].push(await cases[j].run(s));
      } finally {
        await stop(s.child);
      }
    }
  }
  console.log(`\n### One call at a time (µs; ${SEQ} calls after 300, median of ${ROUNDS} alternating rounds)\n`);
  console.log('| server | p50 | p99 | p50 rounds | vs ceiling p50, p99 |');
  console.log('|---|---:|---:|---|---:|');
  const ceil = [1, undefined, 4, 5, undefined, undefined];
  cases.forEach((c, j) => {
    const p50 = median(runs[j].map((x) => x[0]));
    const p99 = median(runs[j].map((x) => x[1]));
    const cj = ceil[j];
    const vs = cj === undefined ? '' : `${(p50 / median(runs[cj].map((x) => x[0]))).toFixed(2)}×, ${(p99 / median(runs[cj].map((x) => x[1]))).toFixed(2)}×`;
    console.log(`| ${c.name} | ${p50.toFixed(0)} | ${p99.toFixed(0)} | ${runs[j].map((x) => x[0].toFixed(0)).join(' / ')} | ${vs} |`);
  });
  if (AGAINST_BASE.length > 0) {
    console.log(baseHeading('one call at a time, as a speed (the base\'s µs / this build\'s)'));
    console.log('| server | p50 | p99 |\n|---|---:|---:|');
    const at = (j: number, k: 0 | 1): number[] => runs[j].map((x) => x[k]);
    for (const [j, b] of AGAINST_BASE) console.log(`| ${cases[j].name} | ${afterBefore(at(b, 0), at(j, 0))} | ${afterBefore(at(b, 1), at(j, 1))} |`);
  }
}

/** LibKind — a library loop run in its own process ('--lib'), placed as the servers are. */
type LibKind = 'check-memory' | 'check-redis' | 'all2-memory' | 'all2-redis';

/**
 * libSeq — p50 and p99 (µs) of the library called one at a time in this process: `check()` of one key, or `checkAll`
 * of two limiters (one compound script on Redis, as the service's two descriptors), on the memory store or on the
 * Redis at `redisPort`.
 */
async function libSeq(kind: LibKind, redisPort: number | undefined): Promise<[number, number]> {
  const { Redis } = await import('ioredis');
  const { limiter, rules, memoryStore, checkAll } = await import('../src/index.js');
  const { redisStore } = await import('../src/stores/redis/index.js');
  const client = kind.endsWith('redis') ? new Redis({ host: '127.0.0.1', port: redisPort }) : undefined;
  const store = client === undefined ? memoryStore() : redisStore({ client });
  const a = limiter({ rules: [rules.fixedWindow({ limit: 1e9, per: '1s' })], store });
  const b = limiter({ rules: [rules.fixedWindow({ limit: 1e9, per: '1m' })], store });
  const one = kind.startsWith('check')
    ? (i: number): Promise<unknown> => a.check(`c${i % KEYS}`)
    : (i: number): Promise<unknown> => checkAll([{ limiter: a, key: `c${i % KEYS}` }, { limiter: b, key: `/p${i % 10}` }]);
  try {
    return await seq(one);
  } finally {
    client?.disconnect();
  }
}

/** libChild — libSeq in a child process pinned as the servers are; resolves with its [p50, p99]. */
async function libChild(kind: LibKind, redisPort: number): Promise<[number, number]> {
  const argv = [process.execPath, fileURLToPath(import.meta.url), '--lib', kind, String(redisPort)];
  const [cmd, ...args] = PIN ? ['taskset', '-c', SERVER_CPU, ...argv] : argv;
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const [code] = (await once(child, 'exit')) as [number];
  if (code !== 0) throw new Error(`library loop ${kind} exited with ${code}`);
  return JSON.parse(out) as [number, number];
}

/**
 * idleEntries — how many times the CPUs have gone idle so far (Linux cpuidle counters), or undefined where they are
 * not readable. On a VM whose idle CPUs halt, each entry is a halt the next wake-up pays for (an inter-processor
 * interrupt through the hypervisor): the count per call says how many such wake-ups a call costs.
 */
function idleEntries(): number | undefined {
  try {
    let n = 0;
    for (let c = 0; c < availableParallelism(); c++) {
      const dir = `/sys/devices/system/cpu/cpu${c}/cpuidle`;
      for (const st of readdirSync(dir)) if (st.startsWith('state')) n += Number(readFileSync(join(dir, st, 'usage'), 'utf8'));
    }
    return n;
  } catch {
    return undefined;
  }
}

async function redis(): Promise<void> {
  const { RedisServer } = await import('../test/support/redis.js');
  const server = await RedisServer.start();
  // redis-server on the load generator's CPUs, stated rather than inherited: every process that calls it (the
  // library loops, the servers) sits on the other CPU, so each Redis round trip crosses CPUs the same way
  if (PIN) spawnSync('taskset', ['-a', '-p', '-c', LOAD_CPUS, String(server.process!.pid)]);
  type Case = { name: string; run: () => Promise<[number, number]> };
  const grpcCase = (name: string, kind: ServerKind, base = false): Case => ({
    name,
    run: async () => {
      const s = await start(kind, server.port, {}, base);
      try {
        return await grpcSeq(s.grpc);
      } finally {
        await stop(s.child);
      }
    },
  });
  const libCase = (name: string, kind: LibKind, here = false): Case => ({
    name, run: () => (here ? libSeq(kind, server.port) : libChild(kind, server.port)),
  });
  const cases: Case[] = [
    libCase('library check(), memory', 'check-memory'),
    libCase('library check(), Redis', 'check-redis'),
    libCase('library checkAll of 2, memory', 'all2-memory'),
    libCase('library checkAll of 2, Redis', 'all2-redis'),
    grpcCase('bare gRPC, constant', 'bare-grpc'),
    grpcCase('bare gRPC + one GET', 'bare-grpc-redis'),
    grpcCase('bare gRPC + one EVALSHA of 2 keys', 'bare-grpc-eval'),
    grpcCase('service, memory', 'service'),
    grpcCase('service, Redis', 'service-redis'),
    libCase('library check(), Redis, in the load process', 'check-redis', true),
    // with BENCH_BASE: the base build's service on memory (10) and on Redis (11)
    ...(BASE === undefined ? [] : [grpcCase(`service, memory, ${BASE_NAME}`, 'service', true), grpcCase(`service, Redis, ${BASE_NAME}`, 'service-redis', true)]),
  ];
  const runs = cases.map(() => [] as number[]);
  const idle = cases.map(() => [] as number[]);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < cases.length; k++) {
        const j = (round + k) % cases.length;
        const before = idleEntries();
        runs[j].push((await cases[j].run())[0]);
        const after = idleEntries();
        if (before !== undefined && after !== undefined) idle[j].push((after - before) / (SEQ + 300));
      }
    }
  } finally {
    await server.stop();
  }
  const p50 = (j: number): number => median(runs[j]);
  const spread = (j: number): string => `${Math.min(...runs[j]).toFixed(0)}–${Math.max(...runs[j]).toFixed(0)}`;
  const idleOf = (j: number): string => (idle[j].length ? median(idle[j]).toFixed(2) : '');
  console.log(`\n### Redis, one call at a time (p50 µs: median of ${ROUNDS} alternating rounds, min–max of the rounds; ${SEQ} calls after 300)\n`);
  console.log(PIN
    ? `Library loops and servers in their own process on CPU ${SERVER_CPU}; redis-server and the gRPC client on CPU ${LOAD_CPUS} (the last row: the library in the load process, on redis-server's CPU).\n`
    : 'No CPU pinning: the scheduler places every process.\n');
  console.log('| | on memory | on Redis | what Redis adds | rounds on Redis | CPU idle entries per call (memory, Redis) |');
  console.log('|---|---:|---:|---:|---|---|');
  const row = (name: string, mem: number, red: number): number => {
    const adds = p50(red) - p50(mem);
    console.log(`| ${name} | ${p50(mem).toFixed(0)} | ${p50(red).toFixed(0)} | ${adds.toFixed(0)} | ${spread(red)} | ${idleOf(mem)}, ${idleOf(red)} |`);
    return adds;
  };
  const lib1 = row('library check() (1 key)', 0, 1);
  const lib2 = row('library checkAll of 2 limiters (one compound script)', 2, 3);
  const get = row('bare grpc-js server, one GET per call', 4, 5);
  const evalsha = row('bare grpc-js server, one EVALSHA of a 2-key script per call', 4, 6);
  const svc = row('service, gRPC ShouldRateLimit (2 descriptors)', 7, 8);
  const here = row(`library check(), in the load process${PIN ? ' (same CPU as redis-server)' : ''}`, 0, 9);
  console.log(`\nWhat Redis adds to the service over what it adds to the library's check(): ${(svc / lib1).toFixed(2)}× (target <= 1.3×); ` +
    `over the library's checkAll of 2: ${(svc / lib2).toFixed(2)}×; over a bare gRPC server's one EVALSHA: ${(svc / evalsha).toFixed(2)}× (one GET: ${(svc / get).toFixed(2)}×). ` +
    `The library's check() in the load process: ${here.toFixed(0)} µs.`);
  if (BASE !== undefined) {
    console.log(baseHeading('gRPC ShouldRateLimit one call at a time, p50 as a speed (the base\'s µs / this build\'s)'));
    console.log('| store | p50 |\n|---|---:|');
    console.log(`| memory | ${afterBefore(runs[10], runs[7])} |`);
    console.log(`| Redis | ${afterBefore(runs[11], runs[8])} |`);
  }
}

async function main(): Promise<void> {
  if (PIN) spawnSync('taskset', ['-p', '-c', LOAD_CPUS, String(process.pid)]);
  console.log(`The limiter service against bare servers of its protocols; node ${process.version}.`);
  console.log(PIN ? `Servers pinned to CPU ${SERVER_CPU}, the load generator to the others (taskset).` : 'No CPU pinning.');
  const parts = (process.env.BENCH_PARTS ?? 'wrk,h2load,throughput,latency,redis').split(',');
  if (parts.includes('wrk')) await outsideHttp();
  if (parts.includes('h2load')) await outsideGrpc();
  if (parts.includes('throughput')) await throughput();
  if (parts.includes('latency')) await latency();
  if (parts.includes('redis') && process.env.BENCH_REDIS !== '0') await redis();
}

const lib = process.argv.indexOf('--lib');
if (lib !== -1) {
  libSeq(process.argv[lib + 1] as LibKind, Number(process.argv[lib + 2])).then(
    (r) => { process.stdout.write(JSON.stringify(r)); process.exit(0); },
    (e) => { console.error(e); process.exit(1); },
  );
} else {
  main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
}
