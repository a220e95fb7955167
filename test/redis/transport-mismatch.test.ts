/**
 * The wrong transport to Redis is a startup error naming the fix, not a server to wait for: plain text to a TLS port
 * (Redis resets the connection: ioredis said only "read ECONNRESET", and the service started on its failure policy,
 * for good) and TLS to a plain port (Redis never answers the handshake: "no answer"). Real redis-servers, one with
 * TLS (openssl-made certificates), one plain, both with a password that no message may show; a server that is
 * simply not there still starts the service on its failure policy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RedisServer, freePort } from '../support/redis.js';
import { makeCerts } from '../support/tls.js';
import { startService, type Running, type ServeOptions } from '../../src/server/serve.js';
import { serveOptions } from '../../src/server/cli.js';
import { configFile } from '../server/support.js';

const PASSWORD = 'pw-transport-secret';

function options(argv: string[], log: string[]): ServeOptions {
  const o = serveOptions(['--config', configFile('policies:\n  a: { rules: "1/s" }\n'), '--port', '0', '--grpc-port', 'off', '--admin-port', 'off', '--redis-connect-timeout', '3000', ...argv], {});
  assert.notEqual(o, 'help');
  return { ...(o as ServeOptions), log: (l) => log.push(l) };
}

async function outcome(o: ServeOptions, log: string[]): Promise<{ started: boolean; message: string; ms: number }> {
  const t0 = performance.now();
  let r: Running | undefined;
  try {
    r = await startService(o);
  } catch (e) {
    const message = (e as Error).message;
    assert.ok(!message.includes(PASSWORD) && !log.join('\n').includes(PASSWORD), `the password leaked: ${message}`);
    return { started: false, message, ms: performance.now() - t0 };
  }
  await r.close();
  return { started: true, message: log.join('\n'), ms: performance.now() - t0 };
}

describe('Redis: the wrong transport', () => {
  let tls: RedisServer;
  let plain: RedisServer;
  before(async () => {
    const certs = makeCerts();
    tls = await RedisServer.start([], false, { tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, clients: 'no' }, requirepass: PASSWORD });
    plain = await RedisServer.start([], false, { requirepass: PASSWORD });
  });
  after(async () => {
    await tls?.stop();
    await plain?.stop();
  });

  test('plain text to a TLS port: a startup error saying the port speaks TLS (rediss:// or --redis-tls)', { timeout: 30_000 }, async () => {
    const log: string[] = [];
    const r = await outcome(options(['--redis', `redis://:${PASSWORD}@127.0.0.1:${tls.port}`], log), log);
    assert.equal(r.started, false, `the service started: ${r.message}`);
    assert.match(r.message, /127\.0\.0\.1:\d+ speaks TLS: use a rediss:\/\/ URL or --redis-tls/);
    assert.ok(r.ms < 8000, `${Math.round(r.ms)} ms`);
  });

  test('TLS to a plain port: a startup error saying the port speaks plain Redis', { timeout: 30_000 }, async () => {
    const log: string[] = [];
    const r = await outcome(options(['--redis', `rediss://:${PASSWORD}@127.0.0.1:${plain.port}`], log), log);
    assert.equal(r.started, false, `the service started: ${r.message}`);
    assert.match(r.message, /127\.0\.0\.1:\d+ speaks plain Redis, not TLS \(it answered "-NOAUTH/);
    assert.ok(r.ms < 8000, `${Math.round(r.ms)} ms`);
  });

  // Sentinel: the same look at the first Sentinel (before, plain text to a TLS Sentinel waited out the connect timeout
  // and served by the failure policy for good, and TLS to a plain one likewise)
  test('Sentinel, plain text to a TLS Sentinel: a startup error saying it speaks TLS', { timeout: 30_000 }, async () => {
    const log: string[] = [];
    const r = await outcome(options(['--redis-sentinel', `127.0.0.1:${tls.port}`, '--redis-sentinel-master', 'mymaster', '--redis-auth', PASSWORD], log), log);
    assert.equal(r.started, false, `the service started: ${r.message}`);
    assert.match(r.message, /127\.0\.0\.1:\d+ speaks TLS: use a rediss:\/\/ URL or --redis-tls/);
    assert.ok(r.ms < 8000, `${Math.round(r.ms)} ms`);
  });

  test('Sentinel, TLS to a plain Sentinel: a startup error saying it speaks plain Redis', { timeout: 30_000 }, async () => {
    const log: string[] = [];
    const r = await outcome(options(['--redis-sentinel', `127.0.0.1:${plain.port}`, '--redis-sentinel-master', 'mymaster', '--redis-tls', '--redis-auth', PASSWORD], log), log);
    assert.equal(r.started, false, `the service started: ${r.message}`);
    assert.match(r.message, /127\.0\.0\.1:\d+ speaks plain Redis, not TLS/);
    assert.ok(r.ms < 8000, `${Math.round(r.ms)} ms`);
  });

  test('nothing listening: the service still starts on its failure policy', { timeout: 30_000 }, async () => {
    const log: string[] = [];
    const port = await freePort();
    const r = await outcome(options(['--redis', `redis://:${PASSWORD}@127.0.0.1:${port}`], log), log);
    assert.equal(r.started, true, r.message);
    assert.match(r.message, /not ready within 3000 ms/);
  });
});
