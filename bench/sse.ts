/**
 * bench/sse — what open live tails cost the checks (`npm run bench sse`): `ratekeeper serve` in a child process
 * (memory store, admin listener on), SSE_CLIENTS attempted tails on /admin/events (default 2 000; the listener
 * answers 503 past its --admin-max-event-clients), then CONCURRENCY loops of POST /v1/check for RUN_MS, a quarter of
 * them from one client over its limit (so that the tail carries every refusal its budget allows). Prints the tails
 * accepted and refused, the checks per second, and the same without any tail (after a warm-up run). RK_CLI points at
 * another build's dist/src/cli.js (to measure before a change); MAX_TAILS sets --admin-max-event-clients.
 */
import http from 'node:http';
import * as require_fs from 'node:fs';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../test/support/redis.js';

const SSE_CLIENTS = Number(process.env.SSE_CLIENTS ?? 2000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 32);
const RUN_MS = Number(process.env.BENCH_MS ?? 5000);
const cliPath = process.env.RK_CLI ?? join(dirname(fileURLToPath(import.meta.url)), '../src/cli.js');

const dir = mkdtempSync(join(tmpdir(), 'rk-bench-sse-'));
const config = join(dir, 'config.yaml');
writeFileSync(config, "policies:\n  api: { rules: '100/min' }\n");
const port = await freePort();
const adminPort = await freePort();
const args = [cliPath, 'serve', '--config', config, '--port', String(port), '--grpc-port', 'off', '--admin-port', String(adminPort)];
if (process.env.MAX_TAILS !== undefined) args.push('--admin-max-event-clients', process.env.MAX_TAILS);
const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
await new Promise<void>((resolve, reject) => {
  let out = '';
  const onData = (c: Buffer): void => {
    out += c.toString();
    if (out.includes('admin listening')) resolve();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${out}`)));
});

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
function check(key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/check', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ policy: 'api', key }));
  });
}

/** cpu — the service process's CPU time so far, ms (utime + stime of /proc/<pid>/stat, in clock ticks of 10 ms). */
function cpu(pid = child.pid): number {
  if (pid === undefined) return 0;
  const { readFileSync } = require_fs;
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}
let lastCpu = 0;

async function load(): Promise<number> {
  const c0 = cpu();
  let n = 0;
  let i = 0;
  const end = performance.now() + RUN_MS;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      const k = i++;
      await check(k % 4 === 0 ? 'abuser' : `user:${k % 5000}`);
      n++;
    }
  }));
  lastCpu = (cpu() - c0) / RUN_MS;
  return (n * 1000) / RUN_MS;
}

const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');
console.log(`Node ${process.version}, ${CONCURRENCY} checks in flight for ${RUN_MS} ms; load average before: ${loadavg().map((x) => x.toFixed(2)).join(' ')}.`);
await load(); // warm-up: the JIT, the sockets
const without = await load();
const cpuWithout = lastCpu;

// the tails live in a process of their own (as an attacker's would): reading 2 000 streams must not slow the load here
const TAILS = `
const http = require('node:http');
let accepted = 0, refused = 0, done = 0;
const n = ${SSE_CLIENTS};
const finish = () => { if (++done === n) process.stdout.write(JSON.stringify({ accepted, refused }) + '\\n'); };
for (let i = 0; i < n; i++) {
  const req = http.get({ host: '127.0.0.1', port: ${adminPort}, path: '/admin/events', agent: false }, (res) => {
    if (res.statusCode === 200) accepted++; else refused++;
    res.on('data', () => undefined);
    finish();
  });
  req.on('error', () => { refused++; finish(); });
}`;
const tailer = spawn(process.execPath, ['-e', TAILS], { stdio: ['ignore', 'pipe', 'inherit'] });
const { accepted, refused } = await new Promise<{ accepted: number; refused: number }>((resolve) => {
  let out = '';
  tailer.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    if (out.includes('\n')) resolve(JSON.parse(out) as { accepted: number; refused: number });
  });
});
const t0 = cpu(tailer.pid);
const withTails = await load();
const tailerCpu = (cpu(tailer.pid) - t0) / RUN_MS;
const pct = (x: number): string => `${Math.round(x * 100)} %`;
console.log(`\n| live tails attempted | accepted | refused (503) | checks/s without tails (service CPU) | checks/s with them (service CPU) | ratio |\n|---:|---:|---:|---:|---:|---:|`);
console.log(`| ${fmt(SSE_CLIENTS)} | ${fmt(accepted)} | ${fmt(refused)} | ${fmt(without)} (${pct(cpuWithout)}) | ${fmt(withTails)} (${pct(lastCpu)}) | ${(withTails / without).toFixed(2)} |`);
console.log(`\nThe tails' process used ${pct(tailerCpu)} of a core meanwhile; this process (the load) ${pct(process.cpuUsage().user / 1000 / (performance.now()))} on average.`);
tailer.kill('SIGTERM');
agent.destroy();
child.kill('SIGTERM');
