/**
 * The `ratekeeper serve` process itself: started as users start it (`node dist/src/cli.js serve …`), its log lines,
 * its help and usage errors, `config check`, and SIGTERM / SIGINT under load — every call the server took is
 * answered (checked against what it charged in Redis), and the exit code is 0.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent } from 'node:http';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tempDir } from '../support/tmp.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { http, LISTENING, rls, run, serve } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 100 }
policies:
  api:
    rules: '100/min'
`;

/**
 * NO_ENV — the environment variables `serve` falls back on, set empty so that the machine's own do not leak in: an
 * empty variable means unset (RATEKEEPER_CONFIG='' once loaded the working directory, HOST='' bound nothing).
 */
const NO_ENV = { RATEKEEPER_CONFIG: '', RUNTIME_ROOT: '', PORT: '', GRPC_PORT: '', REDIS_URL: '', HOST: '' };

describe('ratekeeper serve: start and log', () => {
  test('logs one parseable line per listener, answers at once, and stops on SIGTERM with 0', async () => {
    const s = await serve(['--config', configFile(CONFIG)], NO_ENV);
    try {
      console.log(`# spawn to both listeners logged: ${s.startMs.toFixed(0)} ms (one sample on a shared, noisy machine; speed is measured in bench/)`);
      assert.ok(s.startMs < 10_000, 'a sanity bound only');
      const listeners = s.log.filter((l) => LISTENING.test(l));
      assert.deepEqual(listeners.map((l) => LISTENING.exec(l)![1]), ['http', 'grpc']);
      assert.ok(s.log.some((l) => /^ratekeeper: config .*: 1 file\(s\), 1 domain\(s\), 1 limit\(s\), 1 policy$/.test(l)), s.log.join('\n'));
      assert.equal((await http(s.http, 'GET', '/healthcheck')).status, 200);
      const g = rls(s.grpc);
      assert.equal((await g.call({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value: 'a' }] }] })).overall_code, 'OK');
      g.close();
    } finally {
      s.proc.kill('SIGTERM');
    }
    assert.deepEqual(await s.exited, { code: 0, signal: null });
    assert.ok(s.log.some((l) => l === 'ratekeeper: SIGTERM: draining'));
  });

});

// each of these is a separate short-lived process: run side by side
describe('ratekeeper serve and config: help and usage errors', { concurrency: 4 }, () => {
  test('--help on serve and on config, and ratekeeper help, print their usage and exit 0', async () => {
    const serveHelp = await run(['serve', '--help']);
    assert.equal(serveHelp.code, 0);
    for (const flag of ['--config', '--port', '--grpc-port', '--host', '--redis', '--redis-cluster', '--on-store-error']) assert.ok(serveHelp.stdout.includes(flag), flag);
    assert.equal((await run(['serve', '-h'])).stdout, serveHelp.stdout);
    const configHelp = await run(['config', '--help']);
    assert.equal(configHelp.code, 0);
    assert.match(configHelp.stdout, /ratekeeper config check PATH/);
    const help = await run(['help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /ratekeeper serve --config PATH/);
    assert.match(help.stdout, /ratekeeper config check PATH/);
  });

  const usage: [string, string[], RegExp][] = [
    ['an unknown flag', ['serve', '--config', 'x.yaml', '--bogus'], /--bogus/],
    ['a port that is not a number', ['serve', '--config', 'x.yaml', '--port', 'eighty'], /--port must be an integer.*"eighty"/],
    ['a port out of range', ['serve', '--config', 'x.yaml', '--grpc-port', '70000'], /--grpc-port must be a port.*"70000"/],
    ['an unknown failure policy', ['serve', '--config', 'x.yaml', '--on-store-error', 'maybe'], /--on-store-error must be deny, allow or memory, got "maybe"/],
    ['both --redis and --redis-cluster', ['serve', '--config', 'x.yaml', '--redis', 'a:1', '--redis-cluster', 'b:2'], /--redis or --redis-cluster, not both/],
    ['no configuration', ['serve'], /serve needs --config PATH/],
    ['a flag without its value', ['serve', '--config'], /--config/],
    ['an unknown config command', ['config', 'lint', 'x.yaml'], /unknown config command "lint"/],
    ['config check without a path', ['config', 'check'], /config check takes one PATH/],
  ];
  for (const [what, args, message] of usage) {
    test(`${what}: exit 2 with a message naming it`, async () => {
      const r = await run(args, NO_ENV);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.equal(r.stdout, '');
    });
  }

  test('a configuration that does not load: exit 1, every problem on stderr, no listener', async () => {
    const r = await run(['serve', '--port', '0', '--grpc-port', '0', '--config', configFile('domain: d\ndescriptors:\n  - key: user\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n')], NO_ENV);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /invalid configuration \(1 problem\):\n.*config\.yaml:4: domain: d > descriptors\[0\] \(user\) > rate_limit: .*"fortnight"/);
    assert.doesNotMatch(r.stderr, /listening/);
  });
});

describe('ratekeeper config check', { concurrency: true }, () => {
  test('a good configuration: exit 0 and a summary of what it holds', async () => {
    const r = await run(['config', 'check', configFile(CONFIG)]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^ok: 1 file, 1 domain, 1 limit, 1 policy\n/);
    assert.match(r.stdout, /domain d: 1 limit\n\s+user: fixedWindow/);
    assert.match(r.stdout, /policy api: /);
  });

  test('a bad directory: exit 1, every problem of every file, each naming file, path, field and value', async () => {
    const dir = tempDir('rk-check-');
    writeFileSync(join(dir, 'a.yaml'), [
      'domain: shop',
      'descriptors:',
      '  - key: user',
      '    rate_limit: { unit: fortnight, requests_per_unit: 5 }',
      '  - key: ip',
      '    rate_limt: { unit: second, requests_per_unit: 5 }',
      '  - key: path',
      '    value: /x',
      '    rate_limit: { unlimited: true, unit: second }',
      '',
    ].join('\n'));
    writeFileSync(join(dir, 'b.yaml'), 'domain: other\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: -3 }\n');
    const r = await run(['config', 'check', dir]);
    assert.equal(r.code, 1);
    const lines = r.stdout.trim().split('\n');
    const a = join(dir, 'a.yaml');
    const b = join(dir, 'b.yaml');
    assert.deepEqual(lines.length, 5, r.stdout);
    // file:line, the descriptor path, the field, and the value
    assert.match(lines[0], new RegExp(`^${a}:4: domain: shop > descriptors\\[0\\] \\(user\\) > rate_limit: .*unit "fortnight"`));
    assert.match(lines[1], new RegExp(`^${a}:6: domain: shop > descriptors\\[1\\] \\(ip\\): rate_limt is not a field .*rate_limit`));
    assert.match(lines[2], new RegExp(`^${a}:9: domain: shop > descriptors\\[2\\] \\(path=/x\\) > rate_limit: unit must not be given with unlimited.*"second"`));
    assert.match(lines[3], new RegExp(`^${b}:4: domain: other > descriptors\\[0\\] \\(k\\) > rate_limit: requests_per_unit .*-3`));
    assert.equal(lines[4], '4 problems: the configuration was not loaded');
  });

  test('a path that does not exist: exit 1 naming it', async () => {
    const r = await run(['config', 'check', '/nonexistent/rk.yaml']);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /no such file or directory: "\/nonexistent\/rk\.yaml"/);
  });
});

describe('SIGTERM and SIGINT under load: no call the server took is lost, exit 0', () => {
  let redis: RedisServer;
  before(async () => {
    redis = await RedisServer.start();
  });
  after(async () => {
    await redis.stop();
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(`${signal} with hundreds of gRPC and HTTP calls in flight`, async () => {
      const prefix = uniquePrefix('life');
      const s = await serve(['--config', configFile(CONFIG), '--redis', `redis://127.0.0.1:${redis.port}`, '--prefix', prefix, '--on-store-error', 'deny'], NO_ENV);
      const g = rls(s.grpc);
      const agent = new Agent({ keepAlive: true, maxSockets: 64 });
      let exited = false;
      void s.exited.then(() => (exited = true));
      /** outcome by call id: 'answered', or the error that ended it. */
      const answered = new Set<string>();
      const refused: { id: string; why: string }[] = [];
      const lost: { id: string; why: string }[] = [];
      let next = 0;
      let signalled = false;
      const kinds = ['grpc', 'json', 'check', 'auth', 'health'] as const;

      const one = async (kind: (typeof kinds)[number]): Promise<void> => {
        const id = `call-${kind}-${next++}-x`;
        try {
          if (kind === 'grpc') {
            const r = await g.call({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value: id }] }] });
            assert.equal(r.overall_code, 'OK');
          } else {
            const r = kind === 'json' ? await http(s.http, 'POST', '/json', { domain: 'd', descriptors: [{ entries: [{ key: 'user', value: id }] }] }, { agent })
              : kind === 'check' ? await http(s.http, 'POST', '/v1/check', { policy: 'api', key: id }, { agent })
              : kind === 'auth' ? await http(s.http, 'GET', '/v1/auth', undefined, { agent, headers: { 'x-ratekeeper-policy': 'api', 'x-ratekeeper-key': id } })
              : await http(s.http, 'GET', '/healthcheck', undefined, { agent });
            // once the drain has begun, /healthcheck answers 500 "draining" by design (the load balancer stops
            // sending): that is an answer, and the only other one allowed
            const draining = kind === 'health' && signalled && r.status === 500 && /^NOT OK\ndraining: /.test(r.text);
            if (!draining) assert.equal(r.status, 200, `${id}: ${r.text}`);
          }
          answered.add(id);
        } catch (e) {
          const err = e as { code?: number | string; message: string; reusedSocket?: boolean };
          const why = `${err.code}: ${err.message}${err.reusedSocket === true ? " (on a reused connection)" : ""}`;
          // refused before reaching the service: the listener was closed (ECONNREFUSED), or a connection the
          // server had not read a request from yet was closed (ECONNRESET: a connection still in the accept queue, or
          // an idle keep-alive one as the request went out on it), or grpc-js found the channel gone (UNAVAILABLE).
          // Whether any of these was taken after all is checked exactly below: none may have been charged in Redis.
          const notTaken = kind === 'grpc' ? err.code === grpc.status.UNAVAILABLE : err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET';
          (signalled && notTaken ? refused : lost).push({ id, why });
        }
      };
      const worker = async (kind: (typeof kinds)[number]): Promise<void> => {
        while (!exited) await one(kind);
        await one(kind); // once more after the exit: refused
      };
      const workers = [...kinds.flatMap((k) => Array.from({ length: k === 'grpc' ? 48 : 12 }, () => worker(k)))];
      // the signal once the load is going
      while (answered.size < 300) await new Promise((r) => setTimeout(r, 5));
      signalled = true;
      const inFlightAtSignal = next - answered.size - lost.length;
      s.proc.kill(signal);
      const exit = await s.exited;
      await Promise.all(workers);
      g.close();
      agent.destroy();

      console.log(`# ${signal}: ${next} calls sent, ${answered.size} answered, ${refused.length} refused without reaching the server, ${inFlightAtSignal} in flight at the signal`);
      assert.deepEqual(lost, [], 'a call the server may have taken was not answered');
      assert.deepEqual(exit, { code: 0, signal: null }, s.log.join('\n'));
      assert.ok(inFlightAtSignal >= 50, `the signal came under load (${inFlightAtSignal} calls in flight)`);
      // exact: every call charged in Redis was answered, and no refused call was charged
      const charged = new Set(redis.cli('--scan', '--pattern', `${prefix}*`).split('\n').map((k) => /call-\w+-\d+-x/.exec(k)?.[0]).filter((k) => k !== undefined));
      const unanswered = [...charged].filter((id) => !answered.has(id));
      assert.deepEqual(unanswered, [], 'charged in Redis but never answered');
      assert.deepEqual(refused.filter((r) => charged.has(r.id)), [], 'counted as refused, yet charged');
      assert.ok(s.log.includes(`ratekeeper: ${signal}: draining`) && s.log.includes('ratekeeper: stopped'), s.log.join('\n'));
    });
  }
});

describe('ratekeeper serve: the drain does not wait on a client that stopped reading', () => {
  // A gRPC client that took its answer and then froze (a paused process, a peer behind a dead network path) never
  // answers the GOAWAY; grpc-js's tryShutdown waited for its connection until the 10 s grace ran out. With nothing in
  // flight, the drain now ends at once: every call the server took has been answered.
  test('SIGTERM with an idle, frozen HTTP/2 client connected exits 0 within 3 s', { timeout: 30_000 }, async () => {
    const s = await serve(['--config', configFile(CONFIG)], NO_ENV);
    const client = spawn(process.execPath, ['-e', `
      const h2 = require('node:http2');
      const s = h2.connect('http://127.0.0.1:${s.grpc}');
      const r = s.request({ ':method': 'POST', ':path': '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', 'content-type': 'application/grpc', te: 'trailers' });
      r.on('response', () => {}); r.resume();
      r.on('end', () => console.log('answered'));
      r.end(Buffer.from([0, 0, 0, 0, 0]));
    `], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the raw HTTP/2 client got no answer within 5 s')), 5000);
        client.stdout!.setEncoding('utf8').on('data', (d: string) => {
          if (d.includes('answered')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      client.kill('SIGSTOP');
      const t0 = performance.now();
      s.proc.kill('SIGTERM');
      const exit = await Promise.race([s.exited, new Promise<'late'>((r) => setTimeout(() => r('late'), 8000))]);
      const ms = performance.now() - t0;
      console.log(`# SIGTERM to exit with a frozen idle client: ${ms.toFixed(0)} ms`);
      assert.deepEqual(exit, { code: 0, signal: null }, `the service did not exit within 8 s of SIGTERM:\n${s.log.join('\n')}`);
      assert.ok(ms < 3000, `the drain took ${ms.toFixed(0)} ms with nothing in flight`);
    } finally {
      client.kill('SIGKILL');
      s.kill();
    }
  });
});
