/**
 * test/server/procs — real service processes and real clients for the integration tests: `ratekeeper serve` run as a
 * child process (its listeners' ports read from its log lines), an HTTP client on node:http, and a gRPC client on
 * grpc-js with ratekeeper's rls.proto.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request, type Agent, type IncomingHttpHeaders } from 'node:http';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { rlsClient } from '../../src/server/grpc.js';
import type { RlsRequest, RlsResponse } from '../../src/server/rls.js';

/** CLI — the built bin. */
export const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

/** LISTENING — the log line of one listener: `ratekeeper: <http|grpc> listening on <host>:<port> (…)`. */
export const LISTENING = /^ratekeeper: (http|grpc) listening on (?:\[[^\]]+\]|[^:\s]+):(\d+) /;

/** run — the CLI to completion: exit code, stdout and stderr. */
export function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    p.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    p.once('error', reject);
    p.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Served — a `ratekeeper serve` process with its listeners up. */
export interface Served {
  proc: ChildProcess;
  http: number;
  grpc: number;
  /** log — its stderr so far, line by line. */
  log: string[];
  /** startMs — ms from spawn to the last listener's log line. */
  startMs: number;
  /** exited — resolves with the exit code (or the signal) once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** stop — SIGKILL if still running (for `after` hooks). */
  kill(): void;
}

/** ServeWait — how serve() waits: for the admin listener too, and for how long. */
export interface ServeWait {
  /** admin — the admin listener on (a free port) and waited for too. @default false (--admin-port off) */
  admin?: boolean;
  /** timeoutMs — ms the listeners may take to log. @default 10_000 */
  timeoutMs?: number;
}

/**
 * serve — spawns `ratekeeper serve --port 0 --grpc-port 0 --admin-port off …args` (`--admin-port 0` with
 * `wait.admin`) and waits for every listener's log line.
 */
export function serve(args: string[], env: NodeJS.ProcessEnv = {}, wait: ServeWait = {}): Promise<Served> {
  const t0 = performance.now();
  const admin = wait.admin ?? false;
  const timeoutMs = wait.timeoutMs ?? 10_000;
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--grpc-port', '0', '--admin-port', admin ? '0' : 'off', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const log: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  process.once('exit', () => proc.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    const ports: Record<string, number> = {};
    let adminUp = !admin;
    let rest = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`ratekeeper serve did not log ${admin ? 'every listener' : 'both listeners'} within ${timeoutMs / 1000} s:\n${log.join('\n')}`));
    }, timeoutMs);
    proc.stdout!.resume();
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
      rest += s;
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        log.push(line);
        const m = LISTENING.exec(line);
        if (m !== null) ports[m[1]] = Number(m[2]);
        if (line.startsWith('ratekeeper: admin listening on ')) adminUp = true;
      }
      if (ports.http !== undefined && ports.grpc !== undefined && adminUp) {
        clearTimeout(timer);
        resolve({ proc, http: ports.http, grpc: ports.grpc, log, startMs: performance.now() - t0, exited, kill: () => proc.kill('SIGKILL') });
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`ratekeeper serve exited (${code ?? signal}) before listening:\n${log.join('\n')}${rest}`));
    });
  });
}

/** Reply — an HTTP answer. */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** json — the body parsed, when it is JSON. */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** http — one HTTP request to 127.0.0.1:port; `body` as a string is sent as is, anything else as JSON. */
export function http(port: number, method: string, path: string, body?: unknown, options: { headers?: Record<string, string>; agent?: Agent | false; timeoutMs?: number } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const req = request({
      host: '127.0.0.1', port, method, path, agent: options.agent,
      headers: { ...(data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }), ...options.headers },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on('error', (e: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
      e.reusedSocket = req.reusedSocket;
      reject(e);
    });
    if (options.timeoutMs !== undefined) req.setTimeout(options.timeoutMs, () => req.destroy(Object.assign(new Error('client timeout'), { code: 'CLIENT_TIMEOUT' })));
    req.end(data);
  });
}

/** RlsCaller — a grpc-js client of RateLimitService. */
export interface RlsCaller {
  call(req: RlsRequest, deadlineMs?: number): Promise<RlsResponse>;
  close(): void;
}

/** rls — a client to 127.0.0.1:port (one channel; calls multiplex on it as Envoy's do). */
export function rls(port: number): RlsCaller {
  const Client = rlsClient();
  const c = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    ShouldRateLimit(req: RlsRequest, md: grpc.Metadata, opts: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r: RlsResponse) => void): void;
  };
  return {
    call: (req, deadlineMs = 10_000) => new Promise((resolve, reject) => {
      c.ShouldRateLimit(req, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (e, r) => (e ? reject(e) : resolve(r)));
    }),
    close: () => c.close(),
  };
}

/** waitFor — polls `probe` every 20 ms until it returns true (or throws after `ms`, saying `what`). */
export async function waitFor(what: string, probe: () => boolean | Promise<boolean>, ms = 5000): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    try {
      if (await probe()) return performance.now() - t0;
    } catch {
      // not yet
    }
    if (performance.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** metric — one sample's value from a Prometheus text exposition (labels as given, in any order), or undefined. */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const m = /^[^{\s]+(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) continue;
    const got = new Map<string, string>();
    for (const [, k, v] of (m[1] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) got.set(k, v);
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) sum = (sum ?? 0) + Number(m[2]);
  }
  return sum;
}
