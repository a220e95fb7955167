/**
 * Debian's real Caddy (2.6) in front of a small node:http upstream, asking a real ratekeeper before every request
 * with examples/caddy/Caddyfile and examples/caddy/ratekeeper.yaml themselves (only the ports are rewritten), through
 * a TCP relay that counts Caddy's connections to ratekeeper. Admitted requests reach the upstream and answer with the
 * RateLimit fields; over the limit Caddy answers 429 with RateLimit, RateLimit-Policy and Retry-After, and the
 * upstream is not called; a client's own X-Ratekeeper-* headers do not reach the check; Caddy keeps one connection
 * to ratekeeper (GET /v1/auth answers without a body: a body Caddy does not read made it open one per check);
 * ratekeeper down → the example's 503.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/tmp.js';
import { freePort } from '../support/redis.js';
import { startService, type Running } from '../../src/server/serve.js';
import { http, waitFor } from './procs.js';
import { binary, relay, rewrite, type Relay, assertAdmitted, refusedBurst, spoofedBurst } from './proxies.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/caddy/', import.meta.url));

describe('Caddy in front of an app, with examples/caddy', () => {
  let caddy: ChildProcess;
  let caddyLog = '';
  let app: Server;
  let appCalls = 0;
  let appHeaders: Record<string, string | string[] | undefined>[] = [];
  let rk: Running;
  let toRk: Relay;
  let front: number;

  before(async () => {
    const bin = binary('caddy', ['/usr/bin/caddy'], ['version'], 'caddy is not installed: this test runs Debian\'s real Caddy (apt-get install caddy; .ci/run installs it)');
    const dir = tempDir('rk-caddy-');
    app = createServer((req, res) => {
      appCalls++;
      appHeaders.push(req.headers);
      res.end('hello from the app\n');
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    rk = await startService({ config: join(EXAMPLE, 'ratekeeper.yaml'), port: 0, grpcPort: -1, log: () => undefined });
    toRk = await relay(rk.httpPort!);
    front = await freePort();
    const conf = rewrite(readFileSync(join(EXAMPLE, 'Caddyfile'), 'utf8'), [
      [/http:\/\/:8000 \{/, `http://:${front} {`],
      [/forward_auth 127\.0\.0\.1:8080 \{/, `forward_auth 127.0.0.1:${toRk.port} {`],
      [/== "127\.0\.0\.1:8080"/, `== "127.0.0.1:${toRk.port}"`],
      [/reverse_proxy 127\.0\.0\.1:3000/, `reverse_proxy 127.0.0.1:${(app.address() as { port: number }).port}`],
    ]);
    writeFileSync(join(dir, 'Caddyfile'), conf);
    const env = { ...process.env, HOME: dir, XDG_CONFIG_HOME: join(dir, 'config'), XDG_DATA_HOME: join(dir, 'data') };
    const v = spawnSync(bin, ['validate', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], { encoding: 'utf8', env });
    assert.equal(v.status, 0, `caddy validate: ${v.stderr}`);
    caddy = spawn(bin, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], { stdio: ['ignore', 'ignore', 'pipe'], env });
    caddy.stderr!.setEncoding('utf8').on('data', (s: string) => (caddyLog += s));
    process.once('exit', () => caddy.kill('SIGKILL'));
    await waitFor('caddy listening', async () => (await http(front, 'GET', '/caddy-up', undefined, { headers: { 'x-ratekeeper-cost': '0' } })).status > 0, 10_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${caddyLog}`);
    });
  });
  after(async () => {
    caddy?.kill('SIGTERM');
    await rk?.close();
    await toRk?.close();
    await new Promise((r) => app?.close(r));
  });

  test('admitted: the upstream answers, with ratekeeper\'s RateLimit and RateLimit-Policy on the response', async () => {
    const before = appCalls;
    assertAdmitted(await http(front, 'GET', '/hello'), caddyLog);
    assert.equal(appCalls, before + 1);
  });

  test('one connection to ratekeeper for many checks: /v1/auth answers without a body, so Caddy keeps it', async (t) => {
    await new Promise((r) => setTimeout(r, 1100)); // a fresh second of the 10/s rule
    const before = toRk.connections;
    for (let i = 0; i < 10; i++) {
      const r = await http(front, 'GET', `/seq/${i}`);
      assert.equal(r.status, 200, `${r.status} ${r.text}`);
    }
    const opened = toRk.connections - before;
    t.diagnostic(`${opened} new connection(s) to ratekeeper for 10 sequential checks (${toRk.connections} since the start)`);
    assert.ok(opened <= 1, `Caddy opened ${opened} connections to ratekeeper for 10 sequential checks`);
  });

  test('over the limit: 429 from Caddy with RateLimit, RateLimit-Policy and Retry-After; the upstream not called', async () => {
    const r = await refusedBurst(front, () => appCalls);
    const direct = await http(rk.httpPort!, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': '127.0.0.1' } });
    assert.ok(direct.status === 403 || direct.status === 200, `${direct.status}`);
    assert.equal(r.headers['ratelimit-policy'], direct.headers['ratelimit-policy']);
  });

  test('a client\'s own X-Ratekeeper-* headers do not reach the check: no free cost, no key of its own', async () => {
    await spoofedBurst(front, () => appCalls);
  });

  test('ratekeeper down: Caddy answers 503, as the example documents, and the upstream is not called', async () => {
    await rk.close();
    await toRk.close();
    const before = appCalls;
    const r = await http(front, 'GET', '/hello');
    assert.equal(r.status, 503, `${r.text}\n${caddyLog}`);
    assert.equal(r.text, 'rate limiter unavailable');
    assert.equal(appCalls, before);
  });
});
