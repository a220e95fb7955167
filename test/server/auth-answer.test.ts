/**
 * GET /v1/auth's answer, on a real service (memory store, loopback): 200 or 403 with the RateLimit fields (and
 * Retry-After) and no body, so that a proxy that never reads an answer's body (Caddy's forward_auth) can reuse its
 * connection; bad input keeps its JSON error naming the header. Its calls are timed under their own api="auth"
 * label, apart from POST /v1/check's api="check".
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { http, metric } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
policies:
  login: { rules: [ { algorithm: slidingLog, limit: 2, per: 1h } ] }
`;

describe('GET /v1/auth answers in its headers only, and is counted as api="auth"', () => {
  let rk: Running;
  before(async () => {
    rk = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, log: () => undefined });
  });
  after(async () => {
    await rk?.close();
  });

  test('200 then 403: the fields in headers, Content-Length 0, no body, no Content-Type', async () => {
    const headers = { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': 'alice' };
    for (const [i, status] of [[0, 200], [1, 200], [2, 403]] as const) {
      const r = await http(rk.httpPort!, 'GET', '/v1/auth', undefined, { headers });
      assert.equal(r.status, status, `check ${i}`);
      assert.equal(r.headers['content-length'], '0', `check ${i}`);
      assert.equal(r.text, '', `check ${i}`);
      assert.equal(r.headers['content-type'], undefined, `check ${i}`);
      assert.match(String(r.headers['ratelimit']), /^"2\/1h";r=\d;t=\d+$/);
      assert.equal(r.headers['ratelimit-policy'], '"2/1h";q=2;w=3600');
      if (status === 403) assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
    }
    // HEAD too (nginx and HAProxy may ask with it)
    const head = await http(rk.httpPort!, 'HEAD', '/v1/auth', undefined, { headers });
    assert.equal(head.status, 403);
    // bad input still says what is wrong, in a JSON body
    const bad = await http(rk.httpPort!, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.field, 'X-Ratekeeper-Key');
  });

  test('/metrics: /v1/auth\'s calls under api="auth", POST /v1/check\'s under api="check"', async () => {
    const count = async (api: string): Promise<number> => metric((await http(rk.httpPort!, 'GET', '/metrics')).text, 'ratekeeper_request_duration_seconds_count', { api }) ?? 0;
    const [auth0, check0] = [await count('auth'), await count('check')];
    for (let i = 0; i < 3; i++) await http(rk.httpPort!, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': `m${i}` } });
    await http(rk.httpPort!, 'POST', '/v1/check', { policy: 'login', key: 'm9' });
    assert.equal(await count('auth') - auth0, 3);
    assert.equal(await count('check') - check0, 1);
    const bad = async (): Promise<number> => metric((await http(rk.httpPort!, 'GET', '/metrics')).text, 'ratekeeper_bad_requests_total', { api: 'auth' }) ?? 0;
    const bad0 = await bad();
    await http(rk.httpPort!, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login' } });
    assert.equal(await bad() - bad0, 1);
    const text = (await http(rk.httpPort!, 'GET', '/metrics')).text;
    assert.equal(metric(text, 'ratekeeper_bad_requests_total', { api: 'check' }), undefined);
  });
});
