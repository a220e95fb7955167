/**
 * test/http/options — the middleware's options objects refuse a misspelled name with the closest real one, on every
 * adapter (node:http, Express, Hono, the Fastify plugin and a route's config.rateLimit), and the right spelling does
 * what it says: `trustProxy` keys each client behind a trusted proxy by its forwarded address.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { rules, RatekeeperError } from '../../src/index.js';
import { rateLimit as nodeLimit } from '../../src/http/node.js';
import { rateLimit as expressLimit } from '../../src/http/express.js';
import { rateLimit as honoLimit } from '../../src/http/hono.js';
import { ratekeeperPlugin } from '../../src/http/fastify.js';
import { request } from './apps.js';

function refuses(fn: () => unknown, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof RatekeeperError, `a RatekeeperError, got ${String(e)}`);
    assert.equal(e.message, `ratekeeper: ${message}`);
    return true;
  });
}

describe('HTTP middleware options', () => {
  it('node: trustproxy → trustProxy; spelled right, two clients behind a loopback proxy get their own keys', async () => {
    refuses(() => nodeLimit({ rules: '10/s', trustproxy: ['loopback'] } as never),
      'rateLimit.trustproxy is not an option of rateLimit (did you mean `trustProxy`?), got ["loopback"]');
    refuses(() => nodeLimit({ rules: '10/s', onlimited: () => undefined } as never),
      'rateLimit.onlimited is not an option of rateLimit (did you mean `onLimited`?), got a function');
    refuses(() => nodeLimit({ rules: [rules.leakyBucket({ limit: 5, per: '1s' })], shaping: { maxdelay: '1s' } } as never),
      'rateLimit.shaping.maxdelay is not an option of rateLimit.shaping (did you mean `maxDelay`?), got "1s"');
    const server = http.createServer(nodeLimit({ rules: '2/min', trustProxy: ['loopback'] })((_req, res, d) => res.end(String(d?.remaining))));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const a = await request(url, { headers: { 'x-forwarded-for': '203.0.113.1' } });
      const b = await request(url, { headers: { 'x-forwarded-for': '203.0.113.2' } });
      assert.deepEqual([a.status, a.body, b.status, b.body], [200, '1', 200, '1'], 'each forwarded client has its own count');
    } finally {
      server.close();
    }
  });

  it('express: dryrun → dryRun, legacyheaders → legacyHeaders', () => {
    refuses(() => expressLimit({ rules: '10/s', dryrun: true } as never), 'rateLimit.dryrun is not an option of rateLimit (did you mean `dryRun`?), got true');
    refuses(() => expressLimit({ rules: '10/s', legacyheaders: true } as never), 'rateLimit.legacyheaders is not an option of rateLimit (did you mean `legacyHeaders`?), got true');
    assert.equal(typeof expressLimit({ rules: '10/s', dryRun: true, legacyHeaders: true, onLimited: () => undefined }), 'function');
  });

  it('hono: per → peer, key spelled kye', () => {
    refuses(() => honoLimit({ rules: '10/s', pear: () => '1.2.3.4' } as never), 'rateLimit.pear is not an option of rateLimit (did you mean `peer`?), got a function');
    refuses(() => honoLimit({ rules: '10/s', kye: () => 'k' } as never), 'rateLimit.kye is not an option of rateLimit (did you mean `key`?), got a function');
    assert.equal(typeof honoLimit({ rules: '10/s', peer: () => '1.2.3.4', onLimited: (c) => c.text('no', 429) }), 'function');
  });

  it('fastify: the plugin refuses globl, a route config refuses cots (naming the route); prefix and logLevel are fastify\'s', async () => {
    const app = Fastify();
    app.register(ratekeeperPlugin, { rules: '10/s', globl: false } as never);
    await assert.rejects(async () => { await app.ready(); }, (e: Error) => {
      assert.equal(e.message, 'ratekeeper: ratekeeperPlugin.globl is not an option of ratekeeperPlugin (did you mean `global`?), got false');
      return true;
    });
    await app.close();

    const app2 = Fastify();
    await app2.register(ratekeeperPlugin, { rules: '10/s', prefix: '/api', logLevel: 'warn' });
    assert.throws(() => app2.get('/report', { config: { rateLimit: { cots: 10 } as never } }, async () => 'report'), (e: Error) => {
      assert.equal(e.message, 'ratekeeper: config.rateLimit.cots of GET /report is not an option of config.rateLimit (did you mean `cost`?), got 10');
      return true;
    });
    app2.get('/ok', { config: { rateLimit: { cost: 4 } } }, async () => 'ok');
    await app2.listen({ port: 0, host: '127.0.0.1' });
    try {
      const r = await request(`http://127.0.0.1:${(app2.server.address() as AddressInfo).port}/ok`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.ratelimit, '"10/1s";r=6;t=1', 'cost 4 charged');
    } finally {
      await app2.close();
    }
  });
});
