/**
 * server/demo — `ratekeeper demo`: the limiter service on the memory store with the operators' view, and simulated
 * traffic through it (the clients of ratekeeper/admin's demo: 40 users and three abusers of the EARRRL document's
 * shapes) on its native policies and on an Envoy domain, so that a newcomer sees the dashboard working in one command.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ABUSERS, driveTraffic } from '../admin/demo.js';
import { startService, type Running } from './serve.js';

/** DEMO_CONFIG — the demo's configuration: envoyproxy/ratelimit's form and ratekeeper's policies side by side. */
export const DEMO_CONFIG = `# ratekeeper demo: the configuration the dashboard shows
domain: edge
descriptors:
  - key: remote_address              # envoyproxy/ratelimit's form: a fixed window aligned to the minute
    rate_limit: { unit: minute, requests_per_unit: 300 }
policies:
  api:                               # a measured rate (EARRRL, strict) and a hard cap per minute
    rules:
      - { algorithm: earrrl, limit: 10, per: 1s, halfLife: 10s, name: earrrl 10/s }
      - { algorithm: slidingLog, limit: 1200, per: 1m, name: 1200/1m }
  login:                             # a fixed window: the window-edge abuser gets twice its limit across a boundary
    rules: [{ algorithm: fixedWindow, limit: 10, per: 10s, name: 10/10s }]
`;

export interface ServiceDemoOptions {
  /** port — the admin listener (the dashboard). @default 6070 */
  port?: number;
  /** httpPort — the service's HTTP listener (POST /v1/check, /json, GET /v1/auth …); 0 picks a free port. @default 0 */
  httpPort?: number;
  /** grpcPort — the service's gRPC listener (Envoy's RLS v3); 0 picks a free port. @default 0 */
  grpcPort?: number;
  host?: string;
  /** seconds — stop after this long. @default until stopped */
  seconds?: number;
  print?: (line: string) => void;
}

export interface ServiceDemo {
  running: Running;
  url: string;
  done: Promise<void>;
  close(): Promise<void>;
}

/** runServiceDemo — starts the service with DEMO_CONFIG and drives the demo's traffic through it. */
export async function runServiceDemo(options: ServiceDemoOptions = {}): Promise<ServiceDemo> {
  const print = options.print ?? ((line: string) => console.log(line));
  const dir = mkdtempSync(join(tmpdir(), 'ratekeeper-demo-'));
  const config = join(dir, 'ratekeeper.yaml');
  writeFileSync(config, DEMO_CONFIG);
  // runServiceDemo's directory holds only the configuration: removed when the demo stops (or fails to start)
  const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
  let running: Running;
  try {
    running = await startService({
      config, port: options.httpPort ?? 0, grpcPort: options.grpcPort ?? 0, adminPort: options.port ?? 6070, adminHost: options.host, log: () => undefined,
    });
  } catch (e) {
    removeDir();
    throw e;
  }
  const service = running.service;
  const ip = (key: string): string => key.split(' ')[1] ?? `10.1.${key.length}.${key.charCodeAt(key.length - 1) % 250}`;
  const stopTraffic = driveTraffic((target, key) => {
    service.check(target, key, 1).catch(() => undefined);
    // every request also passes the edge proxy's per-address limit, as Envoy would ask over gRPC
    if (target === 'api') service.shouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'remote_address', value: ip(key) }] }] }).catch(() => undefined);
  });
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let closing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const close = (): Promise<void> => (closing ??= (async () => {
    stopTraffic();
    if (timer !== undefined) clearTimeout(timer);
    await running.close();
    removeDir();
    finish();
  })());
  if (options.seconds !== undefined) timer = setTimeout(() => void close(), options.seconds * 1000);
  const url = running.adminUrl as string;
  print('ratekeeper demo: the limiter service with simulated traffic (memory store)');
  print(`  policies "api" (EARRRL 10/s + 1200/min) and "login" (fixed window 10/10s), domain "edge" (300/min per address)`);
  print(`  abusers: ${Object.values(ABUSERS).join(', ')}`);
  print(`  service: http://127.0.0.1:${running.httpPort} (POST /v1/check, POST /json, GET /metrics), gRPC 127.0.0.1:${running.grpcPort}`);
  print(`  dashboard: ${url}`);
  return { running, url, done, close };
}

/** DEMO_USAGE — `ratekeeper demo --help`. */
export const DEMO_USAGE = `Usage: ratekeeper demo [--port 6070] [--host 127.0.0.1] [--http-port N] [--grpc-port N] [--seconds N]
Starts the limiter service with simulated traffic and prints the dashboard's URL (off loopback, set RATEKEEPER_ADMIN_TOKEN).
  --port N         the dashboard (the admin listener)                 default: 6070
  --host HOST      where the dashboard listens                        default: 127.0.0.1
  --http-port N    the service's HTTP listener (POST /v1/check …)     default: 0, any free port
  --grpc-port N    the service's gRPC listener (Envoy's RLS v3)       default: 0, any free port
  --seconds N      stop after N seconds                               default: until Ctrl-C
`;

/** serviceDemoCommand — `ratekeeper demo [--port 6070] [--host H] [--http-port N] [--grpc-port N] [--seconds N]`, until Ctrl-C or the time given. */
export async function serviceDemoCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args, strict: true,
    options: {
      port: { type: 'string' }, host: { type: 'string' }, 'http-port': { type: 'string' }, 'grpc-port': { type: 'string' },
      seconds: { type: 'string' }, help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(DEMO_USAGE);
    return 0;
  }
  const number = (v: string | undefined, flag: string): number | undefined => {
    if (v === undefined) return undefined;
    const x = Number(v);
    if (!Number.isFinite(x) || x < 0) throw new Error(`${flag} must be a number >= 0, got ${JSON.stringify(v)}`);
    return x;
  };
  const port = (v: string | undefined, flag: string): number | undefined => {
    const x = number(v, flag);
    if (x !== undefined && (!Number.isInteger(x) || x > 65_535)) throw new Error(`${flag} must be a port from 0 to 65535, got ${JSON.stringify(v)}`);
    return x;
  };
  const demo = await runServiceDemo({
    port: port(values.port, '--port'), host: values.host, httpPort: port(values['http-port'], '--http-port'),
    grpcPort: port(values['grpc-port'], '--grpc-port'), seconds: number(values.seconds, '--seconds'),
  });
  const stop = (): void => void demo.close();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await demo.done;
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  return 0;
}
