/**
 * `ratekeeper health` against an HTTPS listener (the image's HEALTHCHECK once an operator turns TLS on with
 * RATEKEEPER_TLS_CERT): the default URL follows RATEKEEPER_TLS_CERT to https://, an https:// --url is accepted, and
 * a real service serving TLS (openssl-made certificate) is found healthy; before, the probe spoke plain HTTP to the
 * TLS port (or refused the https URL) and the container was unhealthy for good. (The environment is read by serve's
 * own rules, so it names the key beside the certificate, as serve needs it.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { probeOptions } from '../../src/server/probe.js';
import { run } from '../server/procs.js';
import { configFile } from '../server/support.js';
import { makeCerts } from '../support/certs.js';

describe('ratekeeper health over TLS', () => {
  let rk: Running;
  let cert = '';
  let key = '';
  before(async () => {
    const certs = makeCerts();
    const server = certs.server('health-server', 'C0C0');
    cert = server.cert;
    key = server.key;
    rk = await startService({ config: configFile('policies:\n  api: { rules: "1/s" }\n'), port: 0, grpcPort: -1, adminPort: -1, tls: { http: { cert: server.cert, key: server.key } }, log: () => undefined });
  });
  after(async () => {
    await rk?.close();
  });

  test('the default URL: https:// when RATEKEEPER_TLS_CERT is set (not off), http:// otherwise', () => {
    assert.deepEqual(probeOptions([], { PORT: '9000' }), { url: 'http://127.0.0.1:9000/healthcheck', timeout: 2000 });
    assert.deepEqual(probeOptions([], { PORT: '9000', RATEKEEPER_TLS_CERT: '/etc/tls/tls.crt', RATEKEEPER_TLS_KEY: '/etc/tls/tls.key' }), { url: 'https://127.0.0.1:9000/healthcheck', timeout: 2000 });
    assert.deepEqual(probeOptions([], { RATEKEEPER_TLS_CERT: 'off' }), { url: 'http://127.0.0.1:8080/healthcheck', timeout: 2000 });
  });

  test('a service serving HTTPS: exit 0 by $PORT with RATEKEEPER_TLS_CERT, and by an https:// --url; plain http:// fails', { timeout: 30_000 }, async () => {
    const byEnv = await run(['health'], { PORT: String(rk.httpPort), RATEKEEPER_TLS_CERT: cert, RATEKEEPER_TLS_KEY: key });
    assert.equal(byEnv.code, 0, byEnv.stderr);
    assert.match(byEnv.stdout, /^https:\/\/127\.0\.0\.1:\d+\/healthcheck: 200 OK$/m);
    const byUrl = await run(['health', '--url', `https://127.0.0.1:${rk.httpPort}/healthcheck`]);
    assert.equal(byUrl.code, 0, byUrl.stderr);
    const plain = await run(['health', '--url', `http://127.0.0.1:${rk.httpPort}/healthcheck`, '--timeout', '1000']);
    assert.equal(plain.code, 1, plain.stdout);
  });
});
