/**
 * `ratekeeper health` — the container image's HEALTHCHECK: exit 0 when /healthcheck answers 200, 1 when it answers
 * anything else or nothing answers (in time), 2 on bad flags; the default URL follows $PORT as `serve` does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createServer, type Server } from 'node:http';
import { freePort } from '../support/redis.js';
import { startService, type Running } from '../../src/server/serve.js';
import { run } from '../server/procs.js';
import { configFile } from '../server/support.js';

describe('ratekeeper health', () => {
  let rk: Running;
  let sick: Server;
  let silent: Server;
  const port = (s: Server): number => (s.address() as { port: number }).port;
  before(async () => {
    rk = await startService({ config: configFile('policies:\n  api: { rules: "1/s" }\n'), port: 0, grpcPort: -1, log: () => undefined });
    sick = createServer((_req, res) => {
      res.statusCode = 500;
      res.end('NOT OK\nstore: down\n');
    });
    silent = createServer(() => undefined); // accepts, never answers
    await Promise.all([sick, silent].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
  });
  after(async () => {
    await rk?.close();
    silent?.closeAllConnections();
    await Promise.all([sick, silent].map((s) => new Promise((r) => s?.close(r))));
  });

  test('a running service: exit 0, by --url and by $PORT', async () => {
    const byUrl = await run(['health', '--url', `http://127.0.0.1:${rk.httpPort}/healthcheck`]);
    assert.equal(byUrl.code, 0, byUrl.stderr);
    assert.match(byUrl.stdout, /: 200 OK$/m);
    const byPort = await run(['health'], { PORT: String(rk.httpPort) });
    assert.equal(byPort.code, 0, byPort.stderr);
  });

  test('a 500, nothing listening, no answer in time: exit 1, saying why', async () => {
    const five = await run(['health', '--url', `http://127.0.0.1:${port(sick)}/healthcheck`]);
    assert.equal(five.code, 1);
    assert.match(five.stderr, /500 NOT OK/);
    const none = await run(['health'], { PORT: String(await freePort()) });
    assert.equal(none.code, 1);
    assert.match(none.stderr, /ECONNREFUSED/);
    const t0 = performance.now();
    const slow = await run(['health', '--url', `http://127.0.0.1:${port(silent)}/`, '--timeout', '300']);
    assert.equal(slow.code, 1);
    assert.match(slow.stderr, /no answer within 300 ms/);
    assert.ok(performance.now() - t0 < 5000);
  });

  test('bad flags: exit 2, naming the flag', async () => {
    for (const [args, message] of [[['--url', 'ftp://x'], /--url must be an http:\/\/ URL/], [['--timeout', '0'], /--timeout must be an integer >= 1/], [['--bogus'], /bogus/]] as const) {
      const r = await run(['health', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
    }
  });
});
