/**
 * `ratekeeper health` asks the listener serve opens from the same environment: the gRPC one (grpc.health.v1 Check,
 * SERVING) when PORT=off — before, it asked a closed HTTP port and a gRPC-only container was unhealthy for good —,
 * $HOST where serve binds one address, and an mTLS listener with a client certificate: its own by default (which the
 * listener accepts when its CA signed it for client use too), or RATEKEEPER_HEALTH_TLS_CERT/KEY — before, the probe
 * sent none and the handshake was refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { probeOptions } from '../../src/server/probe.js';
import { run } from '../server/procs.js';
import { configFile } from '../server/support.js';
import { makeCerts, type Certs, type Pem } from '../support/certs.js';

const CONFIG = 'policies:\n  api: { rules: "1/s" }\n';

describe('ratekeeper health: the default URL follows serve', () => {
  test('PORT=off: the gRPC listener, grpcs:// where it has TLS; both off: exit 2; $HOST unless it binds every address', () => {
    assert.deepEqual(probeOptions([], { PORT: 'off', GRPC_PORT: '9001' }), { url: 'grpc://127.0.0.1:9001', timeout: 2000 });
    assert.deepEqual(probeOptions([], { PORT: 'off' }), { url: 'grpc://127.0.0.1:8081', timeout: 2000 });
    assert.deepEqual(probeOptions([], { PORT: 'off', GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: '/t/c', GRPC_SERVER_TLS_KEY: '/t/k' }), { url: 'grpcs://127.0.0.1:8081', timeout: 2000 });
    assert.throws(() => probeOptions([], { PORT: 'off', GRPC_PORT: 'off' }), /PORT and GRPC_PORT are both off/);
    assert.equal((probeOptions([], { HOST: '10.1.2.3' }) as { url: string }).url, 'http://10.1.2.3:8080/healthcheck');
    assert.equal((probeOptions([], { HOST: '0.0.0.0' }) as { url: string }).url, 'http://127.0.0.1:8080/healthcheck');
    assert.equal((probeOptions([], { HOST: '::' }) as { url: string }).url, 'http://127.0.0.1:8080/healthcheck');
    assert.equal((probeOptions([], { HOST: '::1' }) as { url: string }).url, 'http://[::1]:8080/healthcheck');
    assert.throws(() => probeOptions(['--tls-cert', '/c'], {}), /--tls-cert needs its private key/);
    assert.throws(() => probeOptions(['--url', 'ftp://x'], {}), /--url must be an http:\/\/ URL/);
  });
});

describe('ratekeeper health: a gRPC-only service', () => {
  let rk: Running;
  before(async () => {
    rk = await startService({ config: configFile(CONFIG), port: -1, grpcPort: 0, adminPort: -1, log: () => undefined });
  });
  after(async () => {
    await rk?.close();
  });

  test('PORT=off GRPC_PORT=<its port>: SERVING, exit 0; the RLS service by name; an unknown one: exit 1', { timeout: 30_000 }, async () => {
    const byEnv = await run(['health'], { PORT: 'off', GRPC_PORT: String(rk.grpcPort) });
    assert.equal(byEnv.code, 0, byEnv.stderr);
    assert.match(byEnv.stdout, /^grpc:\/\/127\.0\.0\.1:\d+: SERVING$/m);
    const rls = await run(['health', '--url', `grpc://127.0.0.1:${rk.grpcPort}/envoy.service.ratelimit.v3.RateLimitService`]);
    assert.equal(rls.code, 0, rls.stderr);
    const unknown = await run(['health', '--url', `grpc://127.0.0.1:${rk.grpcPort}/no.such.Service`]);
    assert.equal(unknown.code, 1, unknown.stdout);
    assert.match(unknown.stderr, /NOT_FOUND/);
    const closed = await run(['health', '--url', 'grpc://127.0.0.1:1', '--timeout', '1500']);
    assert.equal(closed.code, 1);
    assert.match(closed.stderr, /UNAVAILABLE|no answer within/);
  });
});

describe('ratekeeper health: mTLS listeners', () => {
  let certs: Certs;
  let both: Pem; // a server certificate its CA signed for client use too
  let serverOnly: Pem;
  let http: Running;
  let grpc: Running;
  before(async () => {
    certs = makeCerts();
    both = certs.leaf('health-both', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
    serverOnly = certs.server('health-server-only', 'C1C1');
    http = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: -1, tls: { http: { cert: serverOnly.cert, key: serverOnly.key, clientCa: certs.ca.cert } }, log: () => undefined });
    grpc = await startService({ config: configFile(CONFIG), port: -1, grpcPort: 0, adminPort: -1, tls: { grpc: { cert: both.cert, key: both.key, clientCa: certs.ca.cert } }, log: () => undefined });
  });
  after(async () => {
    await http?.close();
    await grpc?.close();
  });

  test('gRPC over mTLS, the listener own certificate (for client use too): SERVING', { timeout: 30_000 }, async () => {
    const env = { PORT: 'off', GRPC_PORT: String(grpc.grpcPort), GRPC_SERVER_USE_TLS: 'true', GRPC_SERVER_TLS_CERT: both.cert, GRPC_SERVER_TLS_KEY: both.key, GRPC_CLIENT_TLS_CACERT: certs.ca.cert };
    assert.equal((probeOptions([], env) as { url: string }).url, `grpcs://127.0.0.1:${grpc.grpcPort}`);
    const r = await run(['health'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /SERVING$/m);
  });

  test('HTTPS with mTLS: a server-only certificate is refused as a client one, saying so; RATEKEEPER_HEALTH_TLS_CERT passes', { timeout: 30_000 }, async () => {
    const env = { PORT: String(http.httpPort), GRPC_PORT: 'off', RATEKEEPER_TLS_CERT: serverOnly.cert, RATEKEEPER_TLS_KEY: serverOnly.key, RATEKEEPER_TLS_CLIENT_CA: certs.ca.cert };
    const own = await run(['health', '--timeout', '3000'], env);
    assert.equal(own.code, 1, own.stdout);
    assert.match(own.stderr, /the listener asks for a client certificate/);
    const client = certs.client('health-probe', 'probe.local');
    const given = await run(['health'], { ...env, RATEKEEPER_HEALTH_TLS_CERT: client.cert, RATEKEEPER_HEALTH_TLS_KEY: client.key });
    assert.equal(given.code, 0, given.stderr);
    assert.match(given.stdout, /200 OK$/m);
    const byFlags = await run(['health', '--url', `https://127.0.0.1:${http.httpPort}/healthcheck`, '--tls-cert', client.cert, '--tls-key', client.key]);
    assert.equal(byFlags.code, 0, byFlags.stderr);
    const none = await run(['health', '--url', `https://127.0.0.1:${http.httpPort}/healthcheck`, '--timeout', '3000']);
    assert.equal(none.code, 1, none.stdout);
  });
});
