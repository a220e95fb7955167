/**
 * test/admin/store — GET /admin/store of a real service on the memory store (it says so: no Redis figures), and the
 * admin listener's protections on it: the token (401 without it or with a wrong one), a page of another site or
 * origin (403), a Host that is not the listener (421: DNS rebinding), a change's method (405) or a body not declared
 * JSON (415), and off loopback without a token (403).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startService, type Running } from '../../src/server/serve.js';
import { limiter, rules } from '../../src/index.js';
import { configFile } from '../server/support.js';
import { call, externalAddress, serve } from './support.js';

const CONFIG = `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 1000 }
policies:
  api:
    rules: '1000/h'
`;
const TOKEN = 'store-guard-token-0123456789';

/** raw — one GET (or `method`) with node's http client, so that the Host header can be set. */
function raw(url: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  const u = new URL('admin/store', url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('GET /admin/store', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, adminToken: TOKEN, log: () => undefined });
  });
  after(async () => {
    await running.close();
  });

  it('the memory store says so: one store for every limiter, its maxKeys, nothing of Redis', async () => {
    const r = await call(running.adminUrl!, 'admin/store', { token: TOKEN });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.ok(Math.abs(r.json.now - Date.now()) < 60_000);
    assert.deepEqual(r.json.stores, [{ kind: 'memory', limiters: 2, maxKeys: 100_000 }]);
    const one = await call(running.adminUrl!, 'admin/store?limiter=policy%3Aapi', { token: TOKEN });
    assert.deepEqual(one.json.stores, [{ kind: 'memory', limiters: 1, maxKeys: 100_000 }]);
  });

  it('needs the token; refuses pages of other sites and origins, foreign Hosts, and anything but GET', async () => {
    const url = running.adminUrl!;
    const host = new URL(url).host;
    const auth = { host, authorization: `Bearer ${TOKEN}` };
    const none = await raw(url, { host });
    assert.equal(none.status, 401, none.text);
    assert.equal(none.headers['www-authenticate'], 'Bearer realm="ratekeeper admin"');
    assert.equal((await raw(url, { host, authorization: 'Bearer wrong-token-0123456789' })).status, 401);
    assert.equal((await raw(url, auth)).status, 200);
    const crossSite = await raw(url, { ...auth, 'sec-fetch-site': 'cross-site' });
    assert.equal(crossSite.status, 403);
    assert.equal(JSON.parse(crossSite.text).field, 'origin');
    assert.equal((await raw(url, { ...auth, 'sec-fetch-site': 'same-site' })).status, 403, 'same-site is another origin');
    assert.equal((await raw(url, { ...auth, origin: 'http://evil.example' })).status, 403);
    assert.equal((await raw(url, { ...auth, origin: 'null' })).status, 403);
    assert.equal((await raw(url, { ...auth, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' })).status, 200, 'the dashboard itself');
    const rebound = await raw(url, { ...auth, host: `evil.example:${new URL(url).port}` });
    assert.equal(rebound.status, 421, 'DNS rebinding: the attacker\'s name in Host');
    assert.equal(JSON.parse(rebound.text).field, 'host');
    const post = await raw(url, { ...auth, 'content-type': 'application/json' }, 'POST', '{}');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET');
    assert.equal((await raw(url, { ...auth, 'content-type': 'text/plain' }, 'POST', '{}')).status, 415, 'a form or a no-cors fetch');
    assert.equal((await raw(url, { ...auth, 'content-type': 'application/json' }, 'DELETE')).status, 405);
    assert.equal((await call(url, 'admin/store/more', { token: TOKEN })).status, 404);
  });

  it('without a token it answers on loopback only (403 off loopback)', async () => {
    const ext = await externalAddress();
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1m' })] });
    const off = await serve({ limiters: { lim } }, ext);
    const on = await serve({ limiters: { lim } });
    try {
      const r = await call(off.url, 'admin/store');
      assert.equal(r.status, 403, r.text);
      assert.match(r.json.error, /needs a token when it is reached off loopback/);
      const ok = await call(on.url, 'admin/store');
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.json.stores, [{ kind: 'memory', limiters: 1, maxKeys: 100_000 }]);
    } finally {
      await off.close();
      await on.close();
    }
  });
});
