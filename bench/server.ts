/**
 * bench/server — the limiter service against its ceilings, side by side in one run (`npm run bench server`):
 * - gRPC ShouldRateLimit (2 descriptors, memory store) vs a bare grpc-js server answering a constant
 *   RateLimitResponse (same proto): throughput with BENCH_STREAMS (64) calls in flight from this process;
 * - HTTP POST /v1/check and POST /json vs a bare node:http server that reads the body and answers a constant JSON;
 * - p50 and p99 of one call at a time, against the same ceilings;
 * - with Redis (a real redis-server): what the store adds to one call at a time in the service, beside what it adds
 *   to the library's own `check()` (the service's p50 on Redis minus on memory, over the library's p50 on Redis
 *   minus on memory).
 * Every server runs in its own process, pinned to the last CPU (taskset), the load in this one on the others.
 * Rounds alternate the servers; tables give each server's best round and every round. Limits are never reached:
 * the run fails if anything is refused. Environment: BENCH_SECONDS (3), BENCH_ROUNDS (3), BENCH_STREAMS (64),
 * BENCH_CONNECTIONS (64, HTTP), BENCH_SEQ (2000 calls one at a time), BENCH_PIN (1), BENCH_REDIS (1),
 * BENCH_PARTS (throughput,latency,redis).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Grpc from '@grpc/grpc-js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 64);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const SEQ = Number(process.env.BENCH_SEQ ?? 2000);
const KEYS = 10_000;
const PIN = process.env.BENCH_PIN !== '0' && availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;
const SERVER_CPU = String(availableParallelism() - 1);

const CONFIG = `
domain: bench
descriptors:
  - key: client
    rate_limit: { unit: second, requests_per_unit: 1000000000 }
  - key: path
    rate_limit: { unit: minute, requests_per_unit: 1000000000 }
policies:
  api:
    rules: '1000000000/min'
`;

const CONSTANT_RLS = {
  overall_code: 'OK',
  statuses: [
    { code: 'OK', current_limit: { requests_per_unit: 1e9, unit: 'SECOND' }, limit_remaining: 999_999_999, duration_until_reset: { seconds: 1, nanos: 0 } },
    { code: 'OK', current_limit: { requests_per_unit: 1e9, unit: 'MINUTE' }, limit_remaining: 999_999_999, duration_until_reset: { seconds: 60, nanos: 0 } },
  ],
};
/**
 * CONSTANT_CHECK, CONSTANT_JSON — what the bare HTTP server answers: byte for byte the size and shape of the service's
 * answers (a Decision with its RateLimit fields; an RLS response for two descriptors), so that the load generator,
 * which runs on one core and parses every answer, spends the same on both and only the servers' work differs.
 */
const CONSTANT_CHECK = JSON.stringify({
  allowed: true, reason: 'allowed', limit: 1e9, remaining: 999_999_999, retryAfter: 0, resetAfter: 60_000,
  rules: [{ name: '1000000000/1m', algorithm: 'slidingLog', allowed: true, limit: 1e9, remaining: 999_999_999, retryAfter: 0, resetAfter: 60_000 }],
});
const CHECK_HEADERS: Record<string, string> = { 'RateLimit-Policy': '"1000000000/1m";q=1000000000;w=60', RateLimit: '"1000000000/1m";r=999999999;t=60' };
const CONSTANT_JSON = JSON.stringify({
  overallCode: 'OK',
  statuses: [
    { code: 'OK', currentLimit: { requestsPerUnit: 1e9, unit: 'SECOND' }, limitRemaining: 999_999_999, durationUntilReset: '0.5s' },
    { code: 'OK', currentLimit: { requestsPerUnit: 1e9, unit: 'MINUTE' }, limitRemaining: 999_999_999, durationUntilReset: '30s' },
  ],
});

type ServerKind = 'service' | 'service-redis' | 'bare-grpc' | 'bare-http';

/** serve — a server process: prints `<http port> <grpc port>` (−1 for none). */
async function serve(kind: ServerKind, redisPort: string | undefined): Promise<void> {
  let http = -1;
  let grpcPort = -1;
  if (kind === 'service' || kind === 'service-redis') {
    const dir = mkdtempSync(join(tmpdir(), 'rk-bench-'));
    writeFileSync(join(dir, 'bench.yaml'), CONFIG);
    const { startService } = await import('../src/server/serve.js');
    const r = await startService({
      config: join(dir, 'bench.yaml'), port: 0, grpcPort: 0, log: () => undefined,
      ...(kind === 'service-redis' ? { redis: `127.0.0.1:${redisPort}` } : {}),
    });
    http = r.httpPort!;
    grpcPort = r.grpcPort!;
  } else if (kind === 'bare-grpc') {
    const grpc = await import('@grpc/grpc-js');
    const { rlsService } = await import('../src/server/grpc.js');
    const server = new grpc.Server();
    server.addService(rlsService(), { ShouldRateLimit: (_call: unknown, cb: (e: null, r: unknown) => void) => cb(null, CONSTANT_RLS) });
    grpcPort = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  } else {
    const server = createServer((req, res) => {
      req.on('data', () => undefined);
      req.on('end', () => {
        const body = req.url === '/json' ? CONSTANT_JSON : CONSTANT_CHECK;
        if (req.url !== '/json') for (const [k, v] of Object.entries(CHECK_HEADERS)) res.setHeader(k, v);
        res.setHeader('Content-Type', 'application/json');
        res.setHeader('Content-Length', Buffer.byteLength(body));
        res.end(body);
      });
    });
    server.keepAliveTimeout = 65_000;
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    http = (server.address() as { port: number }).port;
  }
  // the server's own CPU time over a measured run (user + system µs), asked for by the load process over IPC
  let from = process.cpuUsage();
  process.on('message', (m) => {
    if (m === 'start') from = process.cpuUsage();
    else if (m === 'stop') {
      const u = process.cpuUsage(from);
      process.send?.(u.user + u.system);
    }
  });
  process.stdout.write(`${http} ${grpcPort}\n`);
}

async function start(kind: ServerKind, redisPort?: number): Promise<{ child: ChildProcess; http: number; grpc: number }> {
  const argv = [process.execPath, fileURLToPath(import.meta.url), '--serve', kind, String(redisPort ?? '')];
  const [cmd, ...args] = PIN ? ['taskset', '-c', SERVER_CPU, ...argv] : argv;
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const [http, grpc] = chunk.toString().trim().split(' ').map(Number);
  return { child, http, grpc };
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL');
  await once(child, 'exit');
}

let grpcMod: typeof Grpc;
let Client: Grpc.ServiceClientConstructor;
async function grpcClient(port: number): Promise<Grpc.Client & { ShouldRateLimit: Function }> {
  grpcMod ??= await import('@grpc/grpc-js');
  Client ??= (await import('../src/server/grpc.js')).rlsClient();
  return new Client(`127.0.0.1:${port}`, grpcMod.credentials.createInsecure()) as unknown as Grpc.Client & { ShouldRateLimit: Function };
}

function rlsRequest(i: number): unknown {
  return { domain: 'bench', descriptors: [{ entries: [{ key: 'client', value: `c${i % KEYS}` }] }, { entries: [{ key: 'path', value: `/p${i % 10}` }] }] };
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
async function grpcSeq(port: number): Promise<[number, number]> {
  const c = await grpcClient(port);
  for (let i = 0; i < 300; i++) await call(c, i);
  const t: number[] = [];
  for (let i = 0; i < SEQ; i++) {
    const s = performance.now();
    await call(c, i);
    t.push((performance.now() - s) * 1000);
  }
  c.close();
  t.sort((a, b) => a - b);
  return [percentile(t, 0.5), percentile(t, 0.99)];
}

function httpBody(path: string, i: number): string {
  return path === '/json' ? JSON.stringify(rlsRequest(i)) : JSON.stringify({ policy: 'api', key: `c${i % KEYS}` });
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
  for (let i = 0; i < 300; i++) await one(i);
  const t: number[] = [];
  for (let i = 0; i < SEQ; i++) {
    const s = performance.now();
    await one(i);
    t.push((performance.now() - s) * 1000);
  }
  agent.destroy();
  t.sort((a, b) => a - b);
  return [percentile(t, 0.5), percentile(t, 0.99)];
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function throughput(): Promise<void> {
  const cases: { name: string; kind: ServerKind; run: (s: { http: number; grpc: number }) => Promise<number> }[] = [
    { name: 'gRPC ShouldRateLimit, ratekeeper (2 descriptors)', kind: 'service', run: (s) => grpcLoad(s.grpc, SECONDS) },
    { name: 'gRPC, bare grpc-js constant response', kind: 'bare-grpc', run: (s) => grpcLoad(s.grpc, SECONDS) },
    { name: 'HTTP POST /v1/check, ratekeeper', kind: 'service', run: (s) => httpLoad(s.http, '/v1/check', SECONDS) },
    { name: 'HTTP POST /json, ratekeeper (2 descriptors)', kind: 'service', run: (s) => httpLoad(s.http, '/json', SECONDS) },
    { name: 'HTTP /v1/check, bare node:http constant answer of the same size', kind: 'bare-http', run: (s) => httpLoad(s.http, '/v1/check', SECONDS) },
    { name: 'HTTP /json, bare node:http constant answer of the same size', kind: 'bare-http', run: (s) => httpLoad(s.http, '/json', SECONDS) },
  ];
  const runs = cases.map(() => [] as number[]);
  /** cpu — the server's CPU µs per call in each round (what the server itself spends, whatever limits the load). */
  const cpu = cases.map(() => [] as number[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < cases.length; k++) {
      const j = (round + k) % cases.length;
      const s = await start(cases[j].kind);
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
  console.log(`\n### Throughput (calls/s; ${SECONDS} s per run after a warm-up run, ${ROUNDS} alternating rounds; gRPC ${STREAMS} calls in flight, HTTP ${CONNECTIONS} connections)\n`);
  console.log('| server | best | median | rounds | vs its ceiling (best, median) | target |');
  console.log('|---|---:|---:|---|---:|---|');
  const row = (j: number, ceiling: number | undefined, target: string): void => {
    const ratio = ceiling === undefined ? '' : `${(best(j) / best(ceiling)).toFixed(2)}×, ${(median(runs[j]) / median(runs[ceiling])).toFixed(2)}×`;
    console.log(`| ${cases[j].name} | ${fmt(best(j))} | ${fmt(median(runs[j]))} | ${runs[j].map(fmt).join(' / ')} | ${ratio} | ${target} |`);
  };
  row(0, 1, '>= 0.6×');
  row(1, undefined, 'ceiling');
  row(2, 4, '>= 0.7×');
  row(3, 5, '>= 0.7×');
  row(4, undefined, 'ceiling');
  row(5, undefined, 'ceiling');
  console.log('\nThe servers\' own CPU per call (µs, user + system, median of rounds): what each server spends, whatever limits the load generator. Ratio: the ceiling\'s µs / this one\'s (as a throughput on one core).\n');
  console.log('| server | CPU µs per call (median) | rounds | vs its ceiling | target |');
  console.log('|---|---:|---|---:|---|');
  const cpuRow = (j: number, ceiling: number | undefined, target: string): void => {
    const ratio = ceiling === undefined ? '' : `${(median(cpu[ceiling]) / median(cpu[j])).toFixed(2)}×`;
    console.log(`| ${cases[j].name} | ${median(cpu[j]).toFixed(1)} | ${cpu[j].map((x) => x.toFixed(1)).join(' / ')} | ${ratio} | ${target} |`);
  };
  cpuRow(0, 1, '>= 0.6×');
  cpuRow(1, undefined, 'ceiling');
  cpuRow(2, 4, '>= 0.7×');
  cpuRow(3, 5, '>= 0.7×');
  cpuRow(4, undefined, 'ceiling');
  cpuRow(5, undefined, 'ceiling');
}

async function latency(): Promise<void> {
  const cases: { name: string; kind: ServerKind; run: (s: { http: number; grpc: number }) => Promise<[number, number]> }[] = [
    { name: 'gRPC, ratekeeper', kind: 'service', run: (s) => grpcSeq(s.grpc) },
    { name: 'gRPC, bare', kind: 'bare-grpc', run: (s) => grpcSeq(s.grpc) },
    { name: 'HTTP /v1/check, ratekeeper', kind: 'service', run: (s) => httpSeq(s.http, '/v1/check') },
    { name: 'HTTP /json, ratekeeper', kind: 'service', run: (s) => httpSeq(s.http, '/json') },
    { name: 'HTTP /v1/check, bare', kind: 'bare-http', run: (s) => httpSeq(s.http, '/v1/check') },
    { name: 'HTTP /json, bare', kind: 'bare-http', run: (s) => httpSeq(s.http, '/json') },
  ];
  const runs = cases.map(() => [] as [number, number][]);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < cases.length; k++) {
      const j = (round + k) % cases.length;
      const s = await start(cases[j].kind);
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
}

async function redis(): Promise<void> {
  const { RedisServer } = await import('../test/support/redis.js');
  const { Redis } = await import('ioredis');
  const { limiter, rules, memoryStore } = await import('../src/index.js');
  const { redisStore } = await import('../src/stores/redis/index.js');
  const server = await RedisServer.start();
  const client = new Redis({ host: '127.0.0.1', port: server.port });
  try {
    const rule = rules.fixedWindow({ limit: 1e9, per: '1m' });
    const onRedis = limiter({ rules: [rule], store: redisStore({ client }) });
    const onMemory = limiter({ rules: [rule], store: memoryStore() });
    const lib = async (l: typeof onRedis): Promise<number> => {
      for (let i = 0; i < 300; i++) await l.check(`c${i}`);
      const t: number[] = [];
      for (let i = 0; i < SEQ; i++) {
        const s = performance.now();
        await l.check(`c${i % KEYS}`);
        t.push((performance.now() - s) * 1000);
      }
      t.sort((a, b) => a - b);
      return percentile(t, 0.5);
    };
    const libRedis: number[] = [];
    const libMemory: number[] = [];
    const svcRedis: number[] = [];
    const svcMemory: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      libRedis.push(await lib(onRedis));
      libMemory.push(await lib(onMemory));
      for (const [kind, out] of [['service-redis', svcRedis], ['service', svcMemory]] as const) {
        const s = await start(kind, server.port);
        try {
          out.push((await grpcSeq(s.grpc))[0]);
        } finally {
          await stop(s.child);
        }
      }
    }
    const lr = median(libRedis);
    const lm = median(libMemory);
    const sr = median(svcRedis);
    const sm = median(svcMemory);
    console.log(`\n### Redis, one call at a time (p50 µs, median of ${ROUNDS} rounds; 1 descriptor … 2 descriptors over gRPC)\n`);
    console.log('| | on memory | on Redis | what Redis adds |');
    console.log('|---|---:|---:|---:|');
    console.log(`| library check() | ${lm.toFixed(0)} | ${lr.toFixed(0)} | ${(lr - lm).toFixed(0)} |`);
    console.log(`| service, gRPC ShouldRateLimit (2 descriptors) | ${sm.toFixed(0)} | ${sr.toFixed(0)} | ${(sr - sm).toFixed(0)} |`);
    console.log(`\nWhat Redis adds to the service over what it adds to the library: ${((sr - sm) / (lr - lm)).toFixed(2)}× (target <= 1.3×)`);
  } finally {
    client.disconnect();
    await server.stop();
  }
}

async function main(): Promise<void> {
  if (PIN) spawnSync('taskset', ['-p', '-c', `0-${Number(SERVER_CPU) - 1}`, String(process.pid)]);
  console.log(`The limiter service against bare servers of its protocols; node ${process.version}.`);
  console.log(PIN ? `Servers pinned to CPU ${SERVER_CPU}, the load generator to the others (taskset).` : 'No CPU pinning.');
  const parts = (process.env.BENCH_PARTS ?? 'throughput,latency,redis').split(',');
  if (parts.includes('throughput')) await throughput();
  if (parts.includes('latency')) await latency();
  if (parts.includes('redis') && process.env.BENCH_REDIS !== '0') await redis();
}

const at = process.argv.indexOf('--serve');
if (at !== -1) {
  serve(process.argv[at + 1] as ServerKind, process.argv[at + 2] || undefined).catch((e) => { console.error(e); process.exit(1); });
} else {
  main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
}
