/**
 * test/admin/frameworks — the one handler mounted three ways, each on a real server: node:http at the root, Express
 * under a prefix (with and without its JSON body parser; the app's other routes still answered through next()), and
 * Fastify in an encapsulated scope that leaves the body to the handler.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { adminHandler } from '../../src/admin/index.js';
import { call } from './support.js';

const TOKEN = 'framework-token-0123456789';
let lim: Limiter;
before(() => {
  lim = limiter({ rules: [rules.fixedWindow({ limit: 2, per: '1m', name: 'w' })], observe: true });
});

/** exercise — the same checks through a mounted handler at `base` (ending in /). */
async function exercise(base: string, key: string): Promise<void> {
  const page = await call(base, '');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'] ?? '', /^text\/html/);
  assert.match(page.text, /<script src="assets\/app\.js" defer><\/script>/);
  const js = await call(base, 'assets/app.js');
  assert.equal(js.status, 200);
  assert.match(js.headers['content-type'] ?? '', /^text\/javascript/);
  const uplot = await call(base, 'assets/uPlot.iife.min.js');
  assert.equal(uplot.status, 200, 'uPlot is served from node_modules/uplot/dist');
  assert.equal((await call(base, 'admin/top')).status, 401);
  const r = await call(base, 'admin/blocks', { method: 'POST', token: TOKEN, body: { key, for: '1m', reason: 'framework' } });
  assert.equal(r.status, 201, r.text);
  assert.equal((await lim.check(key)).reason, 'blocked');
  const bad = await call(base, 'admin/blocks', { method: 'POST', token: TOKEN, body: { key, for: 'later' } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.field, 'for');
  const del = await call(base, `admin/blocks/${encodeURIComponent(key)}`, { method: 'DELETE', token: TOKEN });
  assert.equal(del.status, 200);
  assert.notEqual((await lim.check(key)).reason, 'blocked');
  assert.equal((await call(base, 'admin/nope', { token: TOKEN })).status, 404);
  assert.equal((await call(base, 'admin/top', { method: 'PATCH', token: TOKEN })).status, 405);
}

describe('mounting the admin handler', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of closers) await c();
  });

  it('node:http', async () => {
    const handler = adminHandler({ limiters: { api: lim }, token: TOKEN, log: () => undefined });
    const server = http.createServer((req, res) => handler(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => server.close(() => r())));
    await exercise(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 'node-client');
  });

  for (const parser of [false, true]) {
    it(`Express under /ops${parser ? ', after express.json()' : ''}; other routes reach next()`, async () => {
      const app = express();
      if (parser) app.use(express.json());
      app.use('/ops', adminHandler({ limiters: new Map([['api', lim]]), token: TOKEN, log: () => undefined }));
      app.get('/hello', (_req, res) => {
        res.send('hello');
      });
      app.use(adminHandler({ limiters: { api: lim }, token: TOKEN, log: () => undefined }));
      app.get('/after', (_req, res) => {
        res.send('after');
      });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((r) => server.once('listening', r));
      closers.push(() => new Promise((r) => server.close(() => r())));
      const root = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      await exercise(`${root}ops/`, `express-client-${parser}`);
      const redirect = await fetch(`${root}ops`, { redirect: 'manual' });
      assert.equal(redirect.status, 308);
      assert.equal(redirect.headers.get('location'), '/ops/');
      assert.equal((await call(root, 'hello')).text, 'hello');
      assert.equal((await call(root, 'after')).text, 'after', 'a path the handler does not serve goes to next()');
    });
  }

  it('Fastify, in a scope of its own that leaves the body to the handler', async () => {
    const app = Fastify();
    const handler = adminHandler({ limiters: { api: lim }, token: TOKEN, log: () => undefined });
    await app.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
      scope.all('/ops/*', (request, reply) => {
        reply.hijack();
        request.raw.url = request.raw.url!.slice('/ops'.length);
        handler(request.raw, reply.raw);
      });
    });
    app.post('/echo', async (request) => request.body);
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const root = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`;
    await exercise(`${root}ops/`, 'fastify-client');
    const echo = await call(root, 'echo', { method: 'POST', body: { a: 1 } });
    assert.deepEqual(echo.json, { a: 1 }, 'the app\'s own routes keep their JSON parser');
  });
});
