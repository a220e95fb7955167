/**
 * Redis over TLS, with a password, as `ratekeeper serve` reaches it: real redis-server processes speaking only TLS
 * (`--port 0 --tls-port`), certificates made by openssl in the test (test/support/tls.ts), the service started from
 * its own flags and envoyproxy/ratelimit's variables (serveOptions → startService). A trusted server is served; a
 * CA that did not sign the server's certificate, a name the certificate does not carry, a missing client
 * certificate and a wrong password are each a startup error, within the connect bound, naming the flag or variable,
 * and never showing the password. A TLS Cluster (`--tls-cluster yes`) serves too.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { RedisCluster, RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { makeCerts, type Certs } from '../support/tls.js';
import { startService, type Running } from '../../src/server/serve.js';
import { serveOptions } from '../../src/server/cli.js';
import { http } from '../server/procs.js';
import { configFile } from '../server/support.js';
import { limiter, rules } from '../../src/index.js';
import { redisStore, type NodeRedisLike } from '../../src/stores/redis/index.js';
import type { ServeOptions } from '../../src/server/serve.js';

const CONFIG = `
policies:
  login:
    rules: '3/h'
`;
const PASSWORD = 'pw-hunter2-secret';

/** options — ServeOptions from flags and variables, as `ratekeeper serve` reads them, on free ports. */
function options(argv: string[], env: NodeJS.ProcessEnv, log: string[]): ServeOptions {
  const o = serveOptions(['--config', configFile(CONFIG), '--port', '0', '--grpc-port', 'off', '--admin-port', 'off', '--redis-connect-timeout', '3000', ...argv], env);
  assert.notEqual(o, 'help');
  return { ...(o as ServeOptions), prefix: uniquePrefix('tls'), log: (l) => log.push(l) };
}

/** refused — startService must reject within `ms`; returns the message (asserted free of the password). */
async function refused(o: ServeOptions, ms = 2500): Promise<string> {
  const t0 = performance.now();
  let running: Running | undefined;
  try {
    running = await startService(o);
  } catch (e) {
    const took = performance.now() - t0;
    const msg = (e as Error).message;
    assert.ok(took < ms, `refused after ${Math.round(took)} ms: ${msg}`);
    assert.ok(!msg.includes(PASSWORD), `the password leaked: ${msg}`);
    return msg;
  }
  await running.close();
  assert.fail('the service started');
}

/** checks — three 200s then a 429 for one key of the `3/h` policy: decided by the store. */
async function checks(r: Running): Promise<void> {
  const key = `k-${Math.random()}`;
  const codes: number[] = [];
  for (let i = 0; i < 4; i++) codes.push((await http(r.httpPort!, 'POST', '/v1/check', { policy: 'login', key }, { timeoutMs: 5000 })).status);
  assert.deepEqual(codes, [200, 200, 200, 429]);
}

describe('Redis over TLS with a password (standalone)', () => {
  let certs: Certs;
  let server: RedisServer;
  let mtls: RedisServer;
  let elsewhere: RedisServer;
  before(async () => {
    certs = makeCerts();
    server = await RedisServer.start([], false, { tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, clients: 'no' }, requirepass: PASSWORD });
    mtls = await RedisServer.start([], false, { tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, clients: 'yes' } });
    elsewhere = await RedisServer.start([], false, { tls: { cert: certs.elsewhereCert, key: certs.elsewhereKey, ca: certs.ca, clients: 'no' } });
  });
  after(async () => {
    await server?.stop();
    await mtls?.stop();
    await elsewhere?.stop();
  });

  test('rediss:// with the CA and the password in the URL: served; the startup line and /healthcheck name the store without the password', async () => {
    const log: string[] = [];
    const r = await startService(options(['--redis', `rediss://:${PASSWORD}@127.0.0.1:${server.port}`, '--redis-tls-ca', certs.ca], {}, log));
    try {
      await checks(r);
      assert.equal(r.store, `redis rediss://127.0.0.1:${server.port} (auth)`);
      assert.ok(log.some((l) => l.includes(`store: redis rediss://:***@127.0.0.1:${server.port}`)), log.join('\n'));
      assert.ok(!log.join('\n').includes(PASSWORD), log.join('\n'));
      const h = await http(r.httpPort!, 'GET', '/healthcheck', undefined, { timeoutMs: 5000 });
      assert.equal(h.status, 200);
      assert.equal(h.text, 'OK');
    } finally {
      await r.close();
    }
  });

  test("envoyproxy/ratelimit's variables: REDIS_TLS, REDIS_TLS_CACERT, REDIS_AUTH (user:password), REDIS_SOCKET_TYPE, REDIS_TYPE, REDIS_URL", async () => {
    const log: string[] = [];
    const env = {
      REDIS_SOCKET_TYPE: 'tcp', REDIS_TYPE: 'SINGLE', REDIS_URL: `127.0.0.1:${server.port}`, REDIS_TLS: 'true',
      REDIS_TLS_CACERT: certs.ca, REDIS_AUTH: `default:${PASSWORD}`,
    };
    const r = await startService(options([], env, log));
    try {
      await checks(r);
      assert.equal(r.store, `redis rediss://127.0.0.1:${server.port} (auth as default)`);
    } finally {
      await r.close();
    }
  });

  test('a CA that did not sign the server certificate: a startup error naming --redis-tls-ca, at once', async () => {
    const msg = await refused(options(['--redis', `rediss://:${PASSWORD}@127.0.0.1:${server.port}`, '--redis-tls-ca', certs.otherCa], {}, []));
    assert.match(msg, /TLS connection to Redis failed/);
    assert.match(msg, /--redis-tls-ca/);
    assert.match(msg, /certificate/);
  });

  test('no CA at all: the system CAs do not trust the test CA: refused, naming them', async () => {
    const msg = await refused(options(['--redis', `rediss://:${PASSWORD}@127.0.0.1:${server.port}`], {}, []));
    assert.match(msg, /trusting the system CAs/);
  });

  test('a wrong password: a startup error naming where the password came from, without it', async () => {
    const env = { REDIS_AUTH: 'not-the-password' };
    const msg = await refused(options(['--redis', `rediss://127.0.0.1:${server.port}`, '--redis-tls-ca', certs.ca], env, []));
    assert.match(msg, /Redis refused the password \(REDIS_AUTH\)/);
    assert.ok(!msg.includes('not-the-password'), msg);
    const msg2 = await refused(options(['--redis', `rediss://user:${PASSWORD}x@127.0.0.1:${server.port}`, '--redis-tls-ca', certs.ca], {}, []));
    assert.match(msg2, /Redis refused the password \(the password in --redis\)/);
    assert.ok(!msg2.includes(`${PASSWORD}x`), msg2);
    const msg3 = await refused(options(['--redis', `rediss://127.0.0.1:${server.port}`, '--redis-tls-ca', certs.ca], {}, []));
    assert.match(msg3, /NOAUTH/);
  });

  test('mutual TLS: without a client certificate refused; with --redis-tls-cert and --redis-tls-key served', async () => {
    const msg = await refused(options(['--redis', `rediss://127.0.0.1:${mtls.port}`, '--redis-tls-ca', certs.ca], {}, []));
    assert.match(msg, /TLS connection to Redis failed|not ready/);
    const r = await startService(options(['--redis', `rediss://127.0.0.1:${mtls.port}`, '--redis-tls-ca', certs.ca, '--redis-tls-cert', certs.clientCert, '--redis-tls-key', certs.clientKey], {}, []));
    try {
      await checks(r);
    } finally {
      await r.close();
    }
  });

  test('a certificate for another name: refused; REDIS_TLS_SKIP_HOSTNAME_VERIFICATION=true still verifies the chain, not the name', async () => {
    const msg = await refused(options(['--redis', `rediss://127.0.0.1:${elsewhere.port}`, '--redis-tls-ca', certs.ca], {}, []));
    assert.match(msg, /certificate's name|altnames|IP: 127\.0\.0\.1/i);
    const r = await startService(options(['--redis', `rediss://127.0.0.1:${elsewhere.port}`, '--redis-tls-ca', certs.ca], { REDIS_TLS_SKIP_HOSTNAME_VERIFICATION: 'true' }, []));
    try {
      await checks(r);
    } finally {
      await r.close();
    }
    // the chain still counts: the wrong CA is refused even without hostname verification
    const msg2 = await refused(options(['--redis', `rediss://127.0.0.1:${elsewhere.port}`, '--redis-tls-ca', certs.otherCa, '--redis-tls-skip-hostname-verification'], {}, []));
    assert.match(msg2, /certificate/);
  });

  test('unreadable or bad files are startup errors naming the flag or variable, before any connection', async () => {
    const bad = join(certs.dir, 'not-a-cert.pem');
    writeFileSync(bad, 'hello\n');
    const base = ['--redis', `rediss://127.0.0.1:${server.port}`];
    assert.match(await refused(options([...base, '--redis-tls-ca', join(certs.dir, 'missing.pem')], {}, []), 200), /--redis-tls-ca ".*missing\.pem" cannot be read/);
    assert.match(await refused(options(base, { REDIS_TLS_CACERT: bad }, []), 200), /REDIS_TLS_CACERT ".*not-a-cert\.pem" holds no PEM certificate/);
    assert.match(await refused(options([...base, '--redis-tls-cert', certs.clientCert], {}, []), 200), /needs both --redis-tls-cert and --redis-tls-key/);
    assert.match(await refused(options([...base, '--redis-tls-cert', certs.clientCert, '--redis-tls-key', certs.serverKey], {}, []), 200), /do not make a certificate and key pair/);
    assert.match(await refused(options(['--redis', `redis://127.0.0.1:${server.port}`, '--redis-tls-ca', certs.ca], {}, []), 200), /--redis-tls-ca is given but TLS is off/);
  });

  test('node-redis reaches the same server with its own TLS options (rediss:// and socket.ca): the store needs nothing more', async () => {
    const { readFileSync } = await import('node:fs');
    const c = createClient({ url: `rediss://:${PASSWORD}@127.0.0.1:${server.port}`, socket: { tls: true, ca: readFileSync(certs.ca, 'utf8') } });
    c.on('error', () => undefined);
    await c.connect();
    try {
      const lim = limiter({ rules: [rules.fixedWindow({ limit: 2, per: '1h' })], store: redisStore({ client: c as unknown as NodeRedisLike, prefix: uniquePrefix('nr-tls') }) });
      const got = [];
      for (let i = 0; i < 3; i++) got.push((await lim.check('k')).allowed);
      assert.deepEqual(got, [true, true, false]);
    } finally {
      c.destroy();
    }
  });
});

describe('a TLS Redis Cluster (--tls-cluster yes)', () => {
  let certs: Certs;
  let cluster: RedisCluster;
  before(async () => {
    certs = makeCerts();
    cluster = await RedisCluster.start({ tls: { cert: certs.serverCert, key: certs.serverKey, ca: certs.ca, clients: 'no' }, requirepass: PASSWORD });
  });
  after(async () => {
    await cluster?.stop();
  });

  test('--redis-cluster with rediss:// nodes, the CA and REDIS_AUTH: served, every master reachable', async () => {
    const log: string[] = [];
    const nodes = cluster.nodes.map((n) => `rediss://127.0.0.1:${n.port}`).join(',');
    const r = await startService(options(['--redis-cluster', nodes, '--redis-tls-ca', certs.ca], { REDIS_AUTH: PASSWORD }, log));
    try {
      for (let i = 0; i < 3; i++) await checks(r);
      assert.match(r.store, /^redis cluster of rediss:\/\/127\.0\.0\.1:\d+,/);
      const h = await http(r.httpPort!, 'GET', '/healthcheck', undefined, { timeoutMs: 5000 });
      assert.equal(h.text, 'OK');
      assert.ok(!log.join('\n').includes(PASSWORD));
    } finally {
      await r.close();
    }
  });
});
