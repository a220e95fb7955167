/**
 * Debian's real HAProxy (2.6) in front of a small node:http upstream, asking a real ratekeeper before every request
 * with examples/haproxy/haproxy.cfg and its Lua action examples/haproxy/ratekeeper.lua themselves (only the ports and
 * the script's path are rewritten). Admitted requests reach the upstream and answer with the RateLimit fields; over
 * the limit HAProxy answers 429 with RateLimit, RateLimit-Policy and Retry-After, and the upstream is not called; the
 * client's own X-Ratekeeper-* headers do not reach the check; ratekeeper down (or answering anything but 200/403) →
 * the example's 503, after the ~3 s HAProxy's httpclient takes to give up on a connection.
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
import { binary, rewrite, assertAdmitted, refusedBurst, spoofedBurst } from './proxies.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/haproxy/', import.meta.url));

describe('HAProxy in front of an app, with examples/haproxy', () => {
  let haproxy: ChildProcess;
  let haproxyLog = '';
  let app: Server;
  let appCalls = 0;
  let rk: Running;
  let front: number;
  let rkPort = 0;

  before(async () => {
    const bin = binary('haproxy', ['/usr/sbin/haproxy'], ['-v'], 'haproxy is not installed: this test runs Debian\'s real HAProxy (apt-get install haproxy; .ci/run installs it)');
    const dir = tempDir('rk-haproxy-');
    app = createServer((_req, res) => {
      appCalls++;
      res.end('hello from the app\n');
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    rk = await startService({ config: join(EXAMPLE, 'ratekeeper.yaml'), port: 0, grpcPort: -1, log: () => undefined });
    rkPort = rk.httpPort!;
    front = await freePort();
    const conf = rewrite(readFileSync(join(EXAMPLE, 'haproxy.cfg'), 'utf8'), [
      [/lua-load ratekeeper\.lua/, `lua-load ${join(EXAMPLE, 'ratekeeper.lua')}`],
      [/bind 127\.0\.0\.1:8000/, `bind 127.0.0.1:${front}`],
      [/http:\/\/127\.0\.0\.1:8080\/v1\/auth/, `http://127.0.0.1:${rkPort}/v1/auth`],
      [/server app 127\.0\.0\.1:3000/, `server app 127.0.0.1:${(app.address() as { port: number }).port}`],
    ]);
    writeFileSync(join(dir, 'haproxy.cfg'), conf);
    const c = spawnSync(bin, ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8' });
    assert.equal(c.status, 0, `haproxy -c: ${c.stdout}${c.stderr}`);
    haproxy = spawn(bin, ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
    haproxy.stdout!.setEncoding('utf8').on('data', (s: string) => (haproxyLog += s));
    haproxy.stderr!.setEncoding('utf8').on('data', (s: string) => (haproxyLog += s));
    process.once('exit', () => haproxy.kill('SIGKILL'));
    await waitFor('haproxy listening', async () => (await http(front, 'GET', '/haproxy-up')).status > 0, 10_000).catch((e: Error) => {
      throw new Error(`${e.message}\n${haproxyLog}`);
    });
  });
  after(async () => {
    haproxy?.kill('SIGTERM');
    await rk?.close();
    await new Promise((r) => app?.close(r));
  });

  test('admitted: the upstream answers, with ratekeeper\'s RateLimit and RateLimit-Policy on the response', async () => {
    await new Promise((r) => setTimeout(r, 1100)); // a fresh second of the 10/s rule after the start-up probes
    const before = appCalls;
    assertAdmitted(await http(front, 'GET', '/hello'), haproxyLog);
    assert.equal(appCalls, before + 1);
  });

  test('over the limit: 429 from HAProxy with RateLimit, RateLimit-Policy and Retry-After; the upstream not called', async () => {
    const r = await refusedBurst(front, () => appCalls);
    const direct = await http(rkPort, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': '127.0.0.1' } });
    assert.ok(direct.status === 403 || direct.status === 200, `${direct.status}`);
    assert.equal(r.headers['ratelimit-policy'], direct.headers['ratelimit-policy']);
  });

  test('a client\'s own X-Ratekeeper-* headers do not reach the check: no free cost, no key of its own', async () => {
    await spoofedBurst(front, () => appCalls);
  });

  test('ratekeeper down: HAProxy answers 503, as the example documents, and the upstream is not called', async (t) => {
    await rk.close();
    const before = appCalls;
    const t0 = performance.now();
    const r = await http(front, 'GET', '/hello', undefined, { timeoutMs: 15_000 });
    const ms = performance.now() - t0;
    t.diagnostic(`answered in ${ms.toFixed(0)} ms`);
    assert.equal(r.status, 503, `${r.text}\n${haproxyLog}`);
    assert.equal(r.text, 'rate limiter unavailable');
    assert.equal(appCalls, before);
  });
});
