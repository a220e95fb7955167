/**
 * test/http/frameworks — what is particular to each adapter: Fastify's plugin (global, encapsulation, route
 * config, preHandler), Express middleware stacking (list fields merge), custom refusal handlers, and Hono on the
 * Web-standard fetch interface the way Bun and Deno call it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { rules } from '../../src/index.js';
import { ratekeeperPlugin } from '../../src/http/fastify.js';
import { rateLimit as expressLimit } from '../../src/http/express.js';
import { rateLimit as honoLimit } from '../../src/http/hono.js';
import { rateLimit as nodeLimit } from '../../src/http/node.js';
import { request } from './apps.js';
import { ManualClock, items } from './scenarios.js';

describe('fastify plugin', () => {
  it('limits every route in scope; config.rateLimit overrides (own rules, cost on the shared limiter) or opts out', async () => {
    const clock = new ManualClock();
    const app = Fastify();
    await app.register(ratekeeperPlugin, { rules: [rules.fixedWindow({ limit: 4, per: '1m', name: 'global' })], clock });
    app.get('/', async () => 'root');
    app.get('/heavy', { config: { rateLimit: { cost: 3 } } }, async () => 'heavy');
    app.get('/own', { config: { rateLimit: { rules: [rules.fixedWindow({ limit: 1, per: '1m', name: 'own' })] } } }, async () => 'own');
    app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      const r1 = await request(url + '/');
      assert.deepEqual(items(r1, 'RateLimit'), { global: { r: 3, t: 60 } });
      const h = await request(url + '/heavy');
      assert.deepEqual(items(h, 'RateLimit'), { global: { r: 0, t: 60 } }, 'cost 3 on the shared limiter');
      assert.equal((await request(url + '/')).status, 429);
      const own = await request(url + '/own');
      assert.equal(own.status, 200, 'a route with its own rules has its own counters');
      assert.deepEqual(items(own, 'RateLimit'), { own: { r: 0, t: 60 } });
      assert.equal((await request(url + '/own')).status, 429);
      const head = await request(url + '/own', { method: 'HEAD' });
      assert.equal(head.status, 429, 'the automatic HEAD route shares its GET route\'s limiter');
      for (let i = 0; i < 5; i++) {
        const ok = await request(url + '/health');
        assert.equal(ok.status, 200);
        assert.equal(ok.headers.ratelimit, undefined);
      }
    } finally {
      await app.close();
    }
  });

  it('is encapsulated: registered in a child context, it limits only that context', async () => {
    const clock = new ManualClock();
    const app = Fastify();
    await app.register(async (child) => {
      await child.register(ratekeeperPlugin, { rules: '1/min', clock });
      child.get('/limited', async () => 'limited');
    });
    await app.register(async (sibling) => {
      await sibling.register(ratekeeperPlugin, { rules: '2/min', clock, global: false });
      sibling.get('/sibling', async () => 'sibling');
    });
    app.get('/open', async () => 'open');
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    try {
      assert.equal((await request(url + '/limited')).status, 200);
      assert.equal((await request(url + '/limited')).status, 429);
      for (let i = 0; i < 3; i++) {
        assert.equal((await request(url + '/open')).status, 200);
        const s = await request(url + '/sibling');
        assert.equal(s.status, 200, 'global: false and no route config');
        assert.equal(s.headers.ratelimit, undefined);
      }
    } finally {
      await app.close();
    }
  });

  it('hook preHandler: the key may come from the parsed body; onLimited answers refusals', async () => {
    const clock = new ManualClock();
    const app = Fastify();
    await app.register(ratekeeperPlugin, {
      rules: '1/min', clock, hook: 'preHandler',
      key: (req) => `user:${(req.body as { user: string }).user}`,
      onLimited: (_req, reply, d) => reply.code(429).send({ custom: true, retry: d.retryAfter }),
    });
    app.post('/', async (req) => ({ user: (req.body as { user: string }).user, remaining: req.rateLimit?.remaining }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const post = (user: string) => request(url + '/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user }) });
    try {
      const a = await post('ann');
      assert.deepEqual(a.json(), { user: 'ann', remaining: 0 });
      const b = await post('ann');
      assert.equal(b.status, 429);
      assert.deepEqual(b.json(), { custom: true, retry: 60_000 });
      assert.equal(b.headers['retry-after'], '60', 'headers are set before the handler runs');
      assert.equal((await post('bob')).status, 200);
    } finally {
      await app.close();
    }
  });

  it('a route with its own rules inherits the plugin\'s store and dry-run', async () => {
    const clock = new ManualClock();
    const app = Fastify();
    await app.register(ratekeeperPlugin, { rules: '100/min', dryRun: true, clock });
    app.get('/own', { config: { rateLimit: { rules: [rules.fixedWindow({ limit: 1, per: '1m', name: 'own' })] } } }, async (req) => ({ reason: req.rateLimit?.reason }));
    await app.ready();
    try {
      assert.equal((await app.inject('/own')).json().reason, 'allowed');
      const second = await app.inject('/own');
      assert.equal(second.statusCode, 200);
      assert.equal(second.json().reason, 'dry-run');
    } finally {
      await app.close();
    }
  });

  it('bad plugin options fail registration, naming the option', async () => {
    const app = Fastify();
    await assert.rejects(async () => { await app.register(ratekeeperPlugin, { rules: '1/min', shaping: { maxDelay: '1s' } }); await app.ready(); }, /shaping needs a leakyBucket rule/);
  });
});

describe('express middleware', () => {
  it('stacked middlewares append their items to RateLimit and RateLimit-Policy', async () => {
    const clock = new ManualClock();
    const app = express();
    app.use(expressLimit({ rules: [rules.fixedWindow({ limit: 100, per: '1m', name: 'app' })], clock }));
    app.get('/search', expressLimit({ rules: [rules.fixedWindow({ limit: 2, per: '1m', name: 'search' })], clock }), (req, res) => {
      res.json({ remaining: req.rateLimit?.remaining });
    });
    const server = await new Promise<http.Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const r = await request(url + '/search');
      assert.deepEqual(items(r, 'RateLimit-Policy'), { app: { q: 100, w: 60 }, search: { q: 2, w: 60 } });
      assert.deepEqual(items(r, 'RateLimit'), { app: { r: 99, t: 60 }, search: { r: 1, t: 60 } });
      assert.deepEqual(r.json(), { remaining: 1 }, 'req.rateLimit is the innermost decision');
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it('onLimited replaces the default refusal', async () => {
    const app = express();
    app.use(expressLimit({ rules: '1/min', onLimited: (_req, res, _next, d) => { res.status(429).send(`slow down: ${d.reason}`); } }));
    app.get('/', (_req, res) => { res.send('ok'); });
    const server = await new Promise<http.Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      assert.equal((await request(url + '/')).body, 'ok');
      const r = await request(url + '/');
      assert.equal(r.status, 429);
      assert.equal(r.body, 'slow down: limited');
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });
});

describe('node:http wrapper', () => {
  it('passes the decision to the handler and survives a throwing handler', async () => {
    const limit = nodeLimit({ rules: '3/min' });
    const server = http.createServer(limit((req, res, d) => {
      if (req.url === '/throw') throw new Error('handler bug');
      res.end(String(d?.remaining));
    }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      assert.equal((await request(url + '/')).body, '2');
      assert.equal((await request(url + '/throw')).status, 500);
      assert.equal((await request(url + '/')).body, '0');
      assert.equal((await request(url + '/')).status, 429);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });
});

describe('hono on the Web-standard fetch interface', () => {
  const build = () => {
    const app = new Hono();
    app.use('*', honoLimit({ rules: [rules.fixedWindow({ limit: 1, per: '1m', name: 'm' })], clock: new ManualClock() }));
    app.get('/', () => new Response('raw')); // a handler that builds its own Response keeps the headers
    return app;
  };

  it('reads the peer the way Deno.serve and Bun.serve pass it', async () => {
    const app = build();
    const deno = (ip: string) => ({ remoteAddr: { hostname: ip, port: 1, transport: 'tcp' } });
    const first = await app.fetch(new Request('http://x/'), deno('2001:db8:5:6::1'));
    assert.equal(first.status, 200);
    assert.equal(await first.text(), 'raw');
    assert.match(first.headers.get('ratelimit') ?? '', /^"m";r=0;t=60$/);
    assert.equal((await app.fetch(new Request('http://x/', { headers: { 'x-forwarded-for': '1.2.3.4' } }), deno('2001:db8:5:6::2'))).status, 429);
    const bun = { requestIP: () => ({ address: '198.51.100.20', family: 'IPv4', port: 1 }) };
    assert.equal((await app.fetch(new Request('http://x/'), bun)).status, 200);
    assert.equal((await app.fetch(new Request('http://x/'), bun)).status, 429);
  });

  it('without a peer address (an edge worker) and no key function: 503, or served with onLimiterError "pass"', async () => {
    const app = build();
    const r = await app.fetch(new Request('http://x/'));
    assert.equal(r.status, 503);
    const open = new Hono();
    open.use('*', honoLimit({ rules: '1/min', onLimiterError: 'pass' }));
    open.get('/', (c) => c.text('ok'));
    assert.equal((await open.fetch(new Request('http://x/'))).status, 200);
    const keyed = new Hono();
    keyed.use('*', honoLimit({ rules: '1/min', key: (c) => c.req.header('x-api-key') ?? 'anonymous' }));
    keyed.get('/', (c) => c.text('ok'));
    assert.equal((await keyed.fetch(new Request('http://x/', { headers: { 'x-api-key': 'k1' } }))).status, 200);
    assert.equal((await keyed.fetch(new Request('http://x/', { headers: { 'x-api-key': 'k1' } }))).status, 429);
  });
});
