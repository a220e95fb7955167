/**
 * bench/http — the HTTP middleware against its anchors, side by side in one run (`npm run bench http`):
 * bare Express vs Express + express-rate-limit vs Express + ratekeeper, and bare Fastify vs Fastify +
 * @fastify/rate-limit vs Fastify + ratekeeper, all on memory stores (and ratekeeper with `headers: false`, to
 * tell what the limiting costs from what writing the two RateLimit fields costs). Every server runs in its own
 * process and autocannon (the load generator) in this one, on loopback. Requests rotate over KEYS client keys (an x-client
 * header, read by every limiter's key function) with limits no key reaches: nothing is rejected, and the run
 * fails if anything is. Rounds alternate the servers, each round starting one server later, so that drift on a
 * shared machine hits them all alike. Interference from other work only ever slows a run down, so the tables
 * report each server's best round (highest req/s, lowest CPU per request), with every round's req/s shown.
 *
 * Two measures: requests per second (what a user sees, but on a machine shared with other work it swings with
 * whatever else runs), and the server process's own CPU time per request (user + system, from process.cpuUsage
 * around the measured run): what the middleware costs, nearly independent of the neighbours. Targets are judged on
 * both; 1e6 / (CPU µs per request) is the throughput one core could give.
 *
 * Two load shapes: one request at a time per connection (what most clients do), and 10 pipelined requests per
 * connection (the server spends less per request on I/O, so what the middleware costs shows more).
 *
 * Environment: BENCH_SECONDS (3), BENCH_WARMUP (1), BENCH_ROUNDS (4), BENCH_CONNECTIONS (16), BENCH_PIPELINING
 * ("1,10": the shapes to run), BENCH_PIN (1: server and load generator on different CPUs with taskset, if present).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { Result } from 'autocannon';

const KEYS = 10_000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PIPELINING = (process.env.BENCH_PIPELINING ?? '1,10').split(',').map(Number);
/** PIN — server processes on the last CPU, the load generator on the others (taskset), so the two never share one. */
const PIN = process.env.BENCH_PIN !== '0' && availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0;
const SERVER_CPU = String(availableParallelism() - 1);
const LIMIT = 1_000_000_000; // per minute and key: never reached

const SERVERS = [
  'express', 'express + express-rate-limit', 'express + ratekeeper', 'express + ratekeeper, headers: false',
  'fastify', 'fastify + @fastify/rate-limit', 'fastify + ratekeeper', 'fastify + ratekeeper, headers: false',
] as const;
type ServerName = (typeof SERVERS)[number];

/** serve — the server side (a child process): listens on a free loopback port and prints it. */
async function serve(name: ServerName): Promise<void> {
  const keyOf = (headers: Record<string, string | string[] | undefined>): string => String(headers['x-client'] ?? 'none');
  let port: number;
  if (name.startsWith('express')) {
    const { default: express } = await import('express');
    const app = express();
    if (name === 'express + express-rate-limit') {
      const { rateLimit } = await import('express-rate-limit');
      app.use(rateLimit({ windowMs: 60_000, limit: LIMIT, keyGenerator: (req) => keyOf(req.headers), validate: false }));
    } else if (name.startsWith('express + ratekeeper')) {
      const { rateLimit } = await import('../src/http/express.js');
      const { rules } = await import('../src/index.js');
      const headers = !name.endsWith('headers: false');
      app.use(rateLimit({ rules: [rules.fixedWindow({ limit: LIMIT, per: '1m' })], key: (req) => keyOf(req.headers), headers }));
    }
    app.get('/', (_req, res) => { res.send('ok'); });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as { port: number }).port;
  } else {
    const { default: Fastify } = await import('fastify');
    const app = Fastify();
    if (name === 'fastify + @fastify/rate-limit') {
      const { default: plugin } = await import('@fastify/rate-limit');
      await app.register(plugin, { max: LIMIT, timeWindow: 60_000, keyGenerator: (req) => keyOf(req.headers) });
    } else if (name.startsWith('fastify + ratekeeper')) {
      const { ratekeeperPlugin } = await import('../src/http/fastify.js');
      const { rules } = await import('../src/index.js');
      const headers = !name.endsWith('headers: false');
      await app.register(ratekeeperPlugin, { rules: [rules.fixedWindow({ limit: LIMIT, per: '1m' })], key: (req) => keyOf(req.headers), headers });
    }
    app.get('/', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  }
  let from = process.cpuUsage();
  process.on('message', (m) => {
    if (m === 'start') from = process.cpuUsage();
    else if (m === 'stop') { const u = process.cpuUsage(from); process.send!(u.user + u.system); }
    else if (m === 'exit') process.exit(0); // lets --cpu-prof write its profile
  });
  process.stdout.write(`${port}\n`);
}

/** start — a server process, and its port once it listens. */
async function start(name: ServerName): Promise<{ child: ChildProcess; port: number }> {
  const argv = [process.execPath, fileURLToPath(import.meta.url), '--serve', name];
  const [cmd, ...args] = PIN ? ['taskset', '-c', SERVER_CPU, ...argv] : argv;
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const [chunk] = (await once(child.stdout!, 'data')) as [Buffer];
  return { child, port: Number(chunk.toString().trim()) };
}

async function load(port: number, duration: number, pipelining: number): Promise<Result> {
  const { default: autocannon } = await import('autocannon'); // here, not at the top: the server processes run this file too
  let i = 0;
  return autocannon({
    url: `http://127.0.0.1:${port}/`,
    connections: CONNECTIONS,
    pipelining,
    duration,
    requests: [{ method: 'GET', path: '/', setupRequest: (req) => ({ ...req, headers: { 'x-client': `client-${(i++ % KEYS)}` } }) }],
  });
}

/** Sample — one measured run: requests per second, and the server's CPU µs per request. */
interface Sample { rps: number; cpu: number }

async function measure(name: ServerName, pipelining: number): Promise<Sample> {
  const { child, port } = await start(name);
  try {
    if (WARMUP > 0) await load(port, WARMUP, pipelining);
    child.send('start');
    const r = await load(port, SECONDS, pipelining);
    const used = once(child, 'message');
    child.send('stop');
    const [cpuMicros] = (await used) as [number];
    if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts — the run is void`);
    return { rps: r.requests.total / SECONDS, cpu: cpuMicros / r.requests.total };
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;

async function table(pipelining: number): Promise<void> {
  const runs = new Map<ServerName, Sample[]>(SERVERS.map((s) => [s, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // each round starts with the next server, so no server always runs first (or right after the same one)
    for (let k = 0; k < SERVERS.length; k++) {
      const s = SERVERS[(round + k) % SERVERS.length];
      runs.get(s)!.push(await measure(s, pipelining));
    }
    console.error(`pipelining ${pipelining}, round ${round + 1}/${ROUNDS}: ${SERVERS.map((s) => `${s} ${fmt(runs.get(s)![round].rps)} req/s ${runs.get(s)![round].cpu.toFixed(1)} µs`).join(', ')}`);
  }
  const rps = (s: ServerName) => Math.max(...runs.get(s)!.map((x) => x.rps));
  const cpu = (s: ServerName) => Math.min(...runs.get(s)!.map((x) => x.cpu));
  console.log(`\n### ${CONNECTIONS} connections, pipelining ${pipelining}\n`);
  console.log(`${SECONDS} s per run after ${WARMUP} s warm-up, best of ${ROUNDS} alternating rounds, ${KEYS} keys round-robin, nothing rejected; node ${process.version}\n`);
  console.log('| server | req/s (best) | req/s rounds | server CPU µs/req (best) | vs bare: req/s, CPU | vs usual limiter: req/s, CPU |');
  console.log('|---|---:|---|---:|---:|---:|');
  for (const s of SERVERS) {
    const bare = s.startsWith('express') ? 'express' : 'fastify';
    const anchor: ServerName = bare === 'express' ? 'express + express-rate-limit' : 'fastify + @fastify/rate-limit';
    const vsBare = s === bare ? '' : `${(rps(s) / rps(bare)).toFixed(3)}×, ${(cpu(bare) / cpu(s)).toFixed(3)}×`;
    const vsAnchor = s.includes('ratekeeper') ? `${(rps(s) / rps(anchor)).toFixed(3)}×, ${(cpu(anchor) / cpu(s)).toFixed(3)}×` : '';
    console.log(`| ${s} | ${fmt(rps(s))} | ${runs.get(s)!.map((x) => fmt(x.rps)).join(' / ')} | ${cpu(s).toFixed(1)} | ${vsBare} | ${vsAnchor} |`);
  }
  console.log('\n(CPU ratios are throughput-equivalent: bare µs/req ÷ this µs/req.)\n');
  console.log('| target | by req/s | by server CPU | met (req/s / CPU) |');
  console.log('|---|---:|---:|---|');
  const yes = (b: boolean) => (b ? 'yes' : 'no');
  for (const [fw, anchor] of [['express', 'express + express-rate-limit'], ['fastify', 'fastify + @fastify/rate-limit']] as const) {
    const rk = `${fw} + ratekeeper` as ServerName;
    const a = rps(rk) / rps(anchor);
    const ac = cpu(anchor) / cpu(rk);
    console.log(`| ${rk} >= 1.2× ${anchor} | ${a.toFixed(3)}× | ${ac.toFixed(3)}× | ${yes(a >= 1.2)} / ${yes(ac >= 1.2)} |`);
    const o = 1 - rps(rk) / rps(fw);
    const oc = 1 - cpu(fw) / cpu(rk);
    console.log(`| ${fw} overhead <= 10 % of bare ${fw} | ${pct(o)} | ${pct(oc)} | ${yes(o <= 0.1)} / ${yes(oc <= 0.1)} |`);
  }
}

async function main(): Promise<void> {
  if (PIN) spawnSync('taskset', ['-p', '-c', `0-${Number(SERVER_CPU) - 1}`, String(process.pid)]);
  console.log('HTTP middleware on memory stores: bare framework, its usual rate limiter, ratekeeper (default headers of each).');
  console.log(PIN ? `Servers pinned to CPU ${SERVER_CPU}, the load generator to the others (taskset).` : 'No CPU pinning.');
  for (const p of PIPELINING) await table(p);
}

const at = process.argv.indexOf('--serve');
if (at !== -1) {
  serve(process.argv[at + 1] as ServerName).catch((e) => { console.error(e); process.exit(1); });
} else {
  main().catch((e) => { console.error(e); process.exit(1); });
}
