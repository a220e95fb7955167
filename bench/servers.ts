/**
 * bench/servers — the server processes `npm run bench server` measures, each started in a process of its own
 * (pinned to the last CPU with taskset when it can): the service (memory or Redis store; this build's, or with
 * BENCH_BASE the base build's, bench/base.ts), a bare grpc-js server answering a constant RateLimitResponse (with one
 * Redis GET or EVALSHA per call for the Redis floor), and a bare node:http server sending the service's own bytes.
 * A server process prints `<http port> <grpc port>` and answers the load process's IPC questions (its CPU time, its
 * gRPC answers by status). Run as a program only with `--serve` (what start() does); importing it starts nothing.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BASE } from './base.js';
import { writeConfig } from './fixture.js';
import type { WrkKind } from './outside.js';

/** PIN — whether servers and load generators are pinned to CPUs (taskset present, 2 CPUs or more, BENCH_PIN not 0). */
export const PIN = process.env.BENCH_PIN !== '0' && availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;
/** SERVER_CPU — the CPU every server process (and library loop) runs on: the last one. */
export const SERVER_CPU = String(availableParallelism() - 1);
/** LOAD_CPUS — the CPUs of the load generator (and of redis-server): all but the servers'. */
export const LOAD_CPUS = SERVER_CPU === '1' ? '0' : `0-${Number(SERVER_CPU) - 1}`;

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

/** ServerKind — which server a process runs. */
export type ServerKind = 'service' | 'service-redis' | 'bare-grpc' | 'bare-grpc-redis' | 'bare-grpc-eval' | 'bare-http';

/**
 * FLOOR_SCRIPT — what 'bare-grpc-eval' runs per call: a Lua script touching two keys, as the service's compound
 * script does for two descriptors, without any rate limiting logic.
 */
const FLOOR_SCRIPT = "return { redis.call('INCR', KEYS[1]), redis.call('INCR', KEYS[2]) }";

/** Answer — what the bare HTTP server sends for one endpoint: the service's headers (its own, in order) and body. */
export interface Answer {
  headers: [string, string][];
  body: string;
}

/** grpcAnswers — in a server process: gRPC calls answered so far, `ok` with grpc-status OK, `other` with any other. */
let grpcAnswers: () => Promise<{ ok: number; other: number }> = () => Promise.resolve({ ok: 0, other: 0 });

/** serve — a server process: prints `<http port> <grpc port>` (−1 for none). */
async function serve(kind: ServerKind, redisPort: string | undefined): Promise<void> {
  let http = -1;
  let grpcPort = -1;
  if (kind === 'service' || kind === 'service-redis') {
    // BENCH_FROM: the base build's dist/ (a server started with `base: true`), else this build
    const from = process.env.BENCH_FROM;
    const { startService } = (await import(from ? pathToFileURL(join(from, 'src/server/serve.js')).href : '../src/server/serve.js')) as typeof import('../src/server/serve.js');
    const r = await startService({
      config: process.env.BENCH_CONFIG!, port: 0, grpcPort: 0, log: () => undefined,
      ...(kind === 'service-redis' ? { redis: `127.0.0.1:${redisPort}` } : {}),
    });
    http = r.httpPort!;
    grpcPort = r.grpcPort!;
    // grpc answers by status, for the h2load part: ShouldRateLimit's latency histogram counts every answer by its code
    grpcAnswers = async () => {
      const m = r.metrics.registry.getSingleMetric('ratekeeper_request_duration_seconds');
      const values = ((await m?.get())?.values ?? []) as { labels: Record<string, string | number>; value: number; metricName?: string }[];
      let ok = 0;
      let other = 0;
      for (const v of values) {
        if (!v.metricName?.endsWith('_count') || v.labels.api !== 'grpc') continue;
        if (v.labels.code === 'OK') ok += v.value;
        else other += v.value;
      }
      return { ok, other };
    };
  } else if (kind === 'bare-grpc' || kind === 'bare-grpc-redis' || kind === 'bare-grpc-eval') {
    const grpc = await import('@grpc/grpc-js');
    const { rlsService } = await import('../src/server/grpc.js');
    const server = new grpc.Server();
    type Cb = (e: Error | null, r?: unknown) => void;
    let answered = 0;
    grpcAnswers = () => Promise.resolve({ ok: answered, other: 0 });
    let answer: (call: { request: { descriptors: { entries: { value: string }[] }[] } }, cb: Cb) => void = (_call, cb) => {
      answered++;
      cb(null, CONSTANT_RLS);
    };
    if (kind !== 'bare-grpc') {
      // one Redis round trip per call before the constant answer: a GET, or EVALSHA of a two-key script (FLOOR_SCRIPT)
      const { Redis } = await import('ioredis');
      const client = new Redis({ host: '127.0.0.1', port: Number(redisPort), maxRetriesPerRequest: 1 });
      const sha = kind === 'bare-grpc-eval' ? ((await client.script('LOAD', FLOOR_SCRIPT)) as string) : '';
      const reply = (cb: Cb) => (e: Error | null | undefined): void => (e ? cb(e) : cb(null, CONSTANT_RLS));
      answer = kind === 'bare-grpc-redis'
        ? (call, cb) => { client.get(`bench:${call.request.descriptors[0].entries[0].value}`, reply(cb)); }
        : (call, cb) => { client.evalsha(sha, 2, `bench:${call.request.descriptors[0].entries[0].value}`, `bench:${call.request.descriptors[1].entries[0].value}`, reply(cb)); };
    }
    server.addService(rlsService(), { ShouldRateLimit: answer as never });
    grpcPort = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))));
  } else {
    // the service's own answers when the load process captured them (BENCH_ANSWERS), else constants of their size
    const captured = process.env.BENCH_ANSWERS === undefined ? undefined : (JSON.parse(process.env.BENCH_ANSWERS) as Record<WrkKind, Answer>);
    const answers: Record<WrkKind, Answer> = captured ?? {
      check: { headers: [...Object.entries(CHECK_HEADERS), ['Content-Type', 'application/json']], body: CONSTANT_CHECK },
      auth: { headers: [...Object.entries(CHECK_HEADERS), ['Content-Type', 'application/json']], body: CONSTANT_CHECK },
      json: { headers: [['Content-Type', 'application/json']], body: CONSTANT_JSON },
    };
    const server = createServer((req, res) => {
      req.on('data', () => undefined);
      req.on('end', () => {
        const a = req.url === '/json' ? answers.json : req.url === '/v1/auth' ? answers.auth : answers.check;
        for (const [k, v] of a.headers) res.setHeader(k, v);
        res.setHeader('Content-Length', Buffer.byteLength(a.body));
        res.end(a.body);
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
    } else if (m === 'grpc-answers') {
      void grpcAnswers().then((a) => process.send?.(a));
    }
  });
  process.stdout.write(`${http} ${grpcPort}\n`);
}

/**
 * start — a server process of `kind` (the Redis servers on the redis-server at `redisPort`); `base` runs the base
 * build's service (BENCH_BASE) instead of this one's; `env` is added to its environment.
 */
export async function start(kind: ServerKind, redisPort?: number, env: Record<string, string> = {}, base = false): Promise<{ child: ChildProcess; http: number; grpc: number }> {
  if (base && BASE === undefined) throw new Error('bench: a base server without BENCH_BASE');
  const argv = [process.execPath, fileURLToPath(import.meta.url), '--serve', kind, String(redisPort ?? '')];
  const [cmd, ...args] = PIN ? ['taskset', '-c', SERVER_CPU, ...argv] : argv;
  // taskset execs node: the child's pid is the server's (its /proc/<pid>/stat is read for the CPU time)
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], env: { ...process.env, BENCH_CONFIG: configFile(), ...(base ? { BENCH_FROM: BASE! } : {}), ...env } });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  const [http, grpc] = chunk.toString().trim().split(' ').map(Number);
  return { child, http, grpc };
}

/** stop — a server process killed and gone. */
export async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGKILL');
  await once(child, 'exit');
}

/** scratch — the load process's temporary directory (config, wrk script, gRPC frame), removed when it exits. */
let scratch: string | undefined;
export function scratchDir(): string {
  if (scratch === undefined) {
    scratch = mkdtempSync(join(tmpdir(), 'rk-bench-'));
    const dir = scratch;
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return scratch;
}

/** configFile — the service's configuration (bench/fixture.ts), written once into the scratch directory. */
let config: string | undefined;
function configFile(): string {
  config ??= writeConfig(scratchDir());
  return config;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--serve');
  if (at === -1) {
    console.error('bench/servers: a server process of bench/server.ts, run with --serve KIND [REDIS_PORT]');
    process.exit(2);
  }
  serve(process.argv[at + 1] as ServerKind, process.argv[at + 2] || undefined).catch((e) => { console.error(e); process.exit(1); });
}
