/**
 * test/server/door — what a newcomer meets first, with real processes and real ports: a listener whose port is taken
 * stops the service with an error naming the listener, the address and the flag (never a bare EADDRINUSE); the
 * command line examples/nginx/nginx.conf documents starts the service; the startup line and `serve --help` name
 * GET /v1/auth and the admin listener; `ratekeeper demo` takes its service ports and leaves no directory behind;
 * `ratekeeper help` lists the commands.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/redis.js';
import { CLI, http, run, serve } from './procs.js';
import { runServiceDemo } from '../../src/server/demo.js';

const EXAMPLE = fileURLToPath(new URL('../../../examples/nginx/', import.meta.url));
const CONFIG = `${EXAMPLE}ratekeeper.yaml`;

/** occupy — a real listener on 127.0.0.1:port (some other process's, as far as ratekeeper can tell). */
function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

describe('a listener whose port is taken: the service exits 1 naming the listener, the address and the flag', { concurrency: 3 }, () => {
  const cases: [string, string, RegExp][] = [
    ['--port', 'the HTTP listener', /cannot start the HTTP listener \(POST \/json.*\) on 127\.0\.0\.1:(\d+): the address is already in use .*\[EADDRINUSE\]: choose another port with --port N or PORT=N \(0: any free port\), or turn it off with --port off/],
    ['--grpc-port', 'the gRPC listener', /cannot start the gRPC listener \(Envoy's RLS v3\) on 127\.0\.0\.1:(\d+): the address is already in use .*\[EADDRINUSE\]: choose another port with --grpc-port N or GRPC_PORT=N .*, or turn it off with --grpc-port off/],
    ['--admin-port', 'the admin listener', /cannot start the admin listener \(the dashboard and admin API, on by default\) on 127\.0\.0\.1:(\d+): the address is already in use .*\[EADDRINUSE\]: choose another port with --admin-port N or RATEKEEPER_ADMIN_PORT=N .*, or turn it off with --admin-port off/],
  ];
  for (const [flag, what, message] of cases) {
    test(`${what} (${flag})`, async () => {
      const port = await freePort();
      const taken = await occupy(port);
      try {
        const ports: Record<string, string> = { '--port': '0', '--grpc-port': '0', '--admin-port': '0', [flag]: String(port) };
        const r = await run(['serve', '--config', CONFIG, ...Object.entries(ports).flat()]);
        assert.equal(r.code, 1, r.stderr);
        const m = message.exec(r.stderr);
        assert.ok(m, r.stderr);
        assert.equal(Number(m[1]), port);
        assert.doesNotMatch(r.stderr, /^Error|at .*\.js:\d+/m, 'a message, not a stack trace');
      } finally {
        await new Promise((r) => taken.close(r));
      }
    });
  }
});

describe('examples/nginx/nginx.conf: the command line it documents', () => {
  test('parses and serves HTTP only (no gRPC listener, no admin listener)', async () => {
    const line = /^#\s+(ratekeeper serve .*)$/m.exec(readFileSync(`${EXAMPLE}nginx.conf`, 'utf8'))?.[1];
    assert.ok(line, 'the example documents its command line');
    const args = line.split(/\s+/).slice(1).map((a) => (a === 'examples/nginx/ratekeeper.yaml' ? CONFIG : a));
    // as documented, but on a free port instead of 8080 (a later flag wins)
    const port = await freePort();
    const p = spawn(process.execPath, [CLI, ...args, '--port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    p.stderr.setEncoding('utf8').on('data', (s: string) => (log += s));
    const exited = new Promise<number | null>((resolve) => p.once('exit', resolve));
    try {
      for (let i = 0; i < 200 && !log.includes('http listening'); i++) {
        if (p.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      assert.match(log, new RegExp(`http listening on 127\\.0\\.0\\.1:${port} `), log);
      assert.doesNotMatch(log, /grpc listening|admin listening/, log);
      assert.equal((await http(port, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': '192.0.2.1' } })).status, 200);
    } finally {
      p.kill('SIGTERM');
      await exited;
    }
  });
});

describe('what the service tells a newcomer', () => {
  test('the startup line names GET /v1/auth; serve --help names /v1/auth and the admin listener with its off switch', async () => {
    const s = await serve(['--config', CONFIG]);
    try {
      assert.ok(s.log.some((l) => /^ratekeeper: http listening on .*GET \/v1\/auth/.test(l)), s.log.join('\n'));
    } finally {
      s.kill();
      await s.exited;
    }
    const help = await run(['serve', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /GET \/v1\/auth/);
    assert.match(help.stdout, /127\.0\.0\.1:6070, on by default/);
    assert.match(help.stdout, /--admin-port off turns it off/);
  });

  test('ratekeeper help lists every command, and simulate --help holds the simulator\'s options', async () => {
    const help = await run(['help']);
    assert.equal(help.code, 0);
    const commands = /Commands:\n([\s\S]*?)\n\n/.exec(help.stdout)?.[1] ?? '';
    for (const c of ['serve', 'config check', 'simulate', 'demo', 'help']) assert.match(commands, new RegExp(`^  ${c} `, 'm'), c);
    assert.doesNotMatch(help.stdout, /--time-unit/, 'the simulator\'s options are simulate --help\'s');
    const sim = await run(['simulate', '--help']);
    assert.equal(sim.code, 0);
    assert.match(sim.stdout, /^ratekeeper simulate —/);
    assert.match(sim.stdout, /--time-unit s\|ms/);
  });
});

describe('ratekeeper demo: its ports, and no directory left behind', () => {
  let demo: Awaited<ReturnType<typeof runServiceDemo>> | undefined;
  before(async () => {
    const [httpPort, grpcPort] = [await freePort(), await freePort()];
    demo = await runServiceDemo({ port: 0, httpPort, grpcPort, print: () => undefined });
    assert.equal(demo.running.httpPort, httpPort);
    assert.equal(demo.running.grpcPort, grpcPort);
  });
  after(async () => demo?.close());

  test('--http-port and --grpc-port choose the service\'s listeners; closing removes the configuration\'s directory', async () => {
    const d = demo!;
    const r = await http(d.running.httpPort!, 'POST', '/v1/check', { policy: 'login', key: 'k' });
    assert.equal(r.status, 200, r.text);
    const file = d.running.service.config?.files[0];
    assert.ok(file !== undefined && existsSync(file), String(file));
    await d.close();
    assert.equal(existsSync(file), false, `${file} was left behind`);
  });

  test('the command line: --http-port, and a bad one is a usage error', async () => {
    const help = await run(['demo', '--help']);
    assert.match(help.stdout, /--http-port N/);
    assert.match(help.stdout, /--grpc-port N/);
    const bad = await run(['demo', '--http-port', '70000']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--http-port must be a port from 0 to 65535, got "70000"/);
  });
});
