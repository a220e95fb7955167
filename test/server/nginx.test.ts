/**
 * Debian's real nginx in front of a small node:http upstream, asking a real ratekeeper before every request, with
 * examples/nginx/nginx.conf and examples/nginx/ratekeeper.yaml themselves: only the ports, the pid file and nginx's
 * temp paths are rewritten to the test's (and `user root;` added when the test runs as root, so that the workers can
 * read the temp directory). Admitted requests reach the upstream with the RateLimit fields; over the limit nginx
 * answers 429 with ratekeeper's RateLimit, RateLimit-Policy and Retry-After, and the upstream is not called;
 * ratekeeper down → the example's 503.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tempDir } from '../support/tmp.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/redis.js';
import { startService, type Running } from '../../src/server/serve.js';
import { http, waitFor } from './procs.js';
import { assertAdmitted, refusedBurst } from './proxies.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/nginx/', import.meta.url));

/** nginxBinary — Debian's nginx; its absence fails the test (CI installs it: .ci/run). */
function nginxBinary(): string {
  for (const p of ['/usr/sbin/nginx', '/usr/bin/nginx']) if (spawnSync(p, ['-v']).status === 0) return p;
  const which = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim() !== '') return which.stdout.trim();
  throw new Error('nginx is not installed: this test runs Debian\'s real nginx (apt-get install nginx; .ci/run installs it)');
}

/** rewrite — the example with the test's ports, pid and temp paths; nothing else changes. */
function rewrite(conf: string, dir: string, ports: { front: number; app: number; ratekeeper: number }): string {
  const replace = (from: RegExp, to: string): void => {
    assert.match(conf, from, `the example no longer has ${from}`);
    conf = conf.replace(from, to);
  };
  replace(/listen 127\.0\.0\.1:8000;/, `listen 127.0.0.1:${ports.front};`);
  replace(/server 127\.0\.0\.1:3000;/, `server 127.0.0.1:${ports.app};`);
  replace(/server 127\.0\.0\.1:8080;/, `server 127.0.0.1:${ports.ratekeeper};`);
  replace(/^pid nginx\.pid;$/m, `pid ${join(dir, 'nginx.pid')};${process.getuid?.() === 0 ? '\nuser root;' : ''}`);
  const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, `${t}_temp`)};`).join('\n');
  replace(/^http \{$/m, `http {\n${temps}`);
  return conf;
}

describe('nginx in front of an app, with examples/nginx', () => {
  let dir: string;
  let nginx: ChildProcess;
  let nginxLog = '';
  let app: Server;
  let appCalls = 0;
  let rk: Running;
  let front: number;

  before(async () => {
    const bin = nginxBinary();
    dir = tempDir('rk-nginx-');
    app = createServer((_req, res) => {
      appCalls++;
      res.end('hello from the app\n');
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    rk = await startService({ config: join(EXAMPLE, 'ratekeeper.yaml'), port: 0, grpcPort: -1, log: () => undefined });
    front = await freePort();
    const conf = rewrite(readFileSync(join(EXAMPLE, 'nginx.conf'), 'utf8'), dir, { front, app: (app.address() as { port: number }).port, ratekeeper: rk.httpPort! });
    writeFileSync(join(dir, 'nginx.conf'), conf);
    const t = spawnSync(bin, ['-t', '-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr'], { encoding: 'utf8' });
    assert.equal(t.status, 0, `nginx -t: ${t.stderr}`);
    nginx = spawn(bin, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', 'stderr', '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
    nginx.stderr!.setEncoding('utf8').on('data', (s: string) => (nginxLog += s));
    process.once('exit', () => nginx.kill('SIGKILL'));
    await waitFor('nginx listening', async () => (await http(front, 'GET', '/nginx-up')).status > 0, 5000).catch((e: Error) => {
      throw new Error(`${e.message}\n${nginxLog}`);
    });
  });
  after(async () => {
    nginx?.kill('SIGQUIT');
    await rk?.close();
    await new Promise((r) => app?.close(r));
  });

  test('admitted: the upstream answers, with ratekeeper\'s RateLimit and RateLimit-Policy on the response', async () => {
    const before = appCalls;
    assertAdmitted(await http(front, 'GET', '/hello'), nginxLog);
    assert.equal(appCalls, before + 1);
  });

  test('over the limit: 429 from nginx with RateLimit, RateLimit-Policy and Retry-After; the upstream not called', async () => {
    // gcra 10/s with a burst of 20: 40 at once (in parallel, so that a slow machine cannot spread them over the
    // refill) get refusals
    const r = await refusedBurst(front, () => appCalls, 10);
    // the same fields ratekeeper gives for this client, straight from it (nginx's key is $remote_addr)
    const direct = await http(rk.httpPort!, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': '127.0.0.1' } });
    assert.ok(direct.status === 403 || direct.status === 200, `${direct.status}`);
    assert.equal(r.headers['ratelimit-policy'], direct.headers['ratelimit-policy']);
  });

  test('a client\'s own X-Ratekeeper-* headers do not reach the check: X-Ratekeeper-Cost: 0 is no way past the limit', async () => {
    // nginx passes the client's headers on to the auth sub-request; a cost of 0 would be admitted and charge nothing
    const before = appCalls;
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => http(front, 'GET', `/free/${i}`, undefined, { headers: { 'x-ratekeeper-cost': '0' } })));
    const over = answers.filter((r) => r.status === 429).length;
    assert.ok(over > 0, `all ${answers.length} admitted: ${answers.map((r) => r.status).join(' ')}`);
    assert.equal(appCalls - before, answers.length - over);
  });

  test('ratekeeper down: nginx answers 503, as the example documents, and the upstream is not called', async () => {
    await rk.close();
    const before = appCalls;
    const r = await http(front, 'GET', '/hello');
    assert.equal(r.status, 503, `${r.text}\n${nginxLog}`);
    assert.equal(r.text, 'rate limiter unavailable\n');
    assert.equal(appCalls, before);
  });
});
