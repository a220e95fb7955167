/**
 * test/http/apps — the same small app on every adapter, served on a loopback port (port 0): each route has its
 * own middleware options (or none), and every handler answers JSON { id, reason, delay } and records the order
 * in which requests reached it (`served`, by their x-id header); its status is the request's x-status header (200
 * without: the outcome-counting tests make failures with it).
 */
import http, { type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import type { Decision } from '../../src/index.js';
import { rateLimit as nodeLimit, type NodeRateLimitOptions } from '../../src/http/node.js';
import { rateLimit as expressLimit, type ExpressRateLimitOptions } from '../../src/http/express.js';
import { ratekeeperPlugin, type FastifyRouteRateLimitOptions } from '../../src/http/fastify.js';
import { rateLimit as honoLimit, type HonoRateLimitOptions } from '../../src/http/hono.js';

/** Hdr — reads a request header, whatever the framework's request is. */
export type Hdr = (req: unknown, name: string) => string | undefined;

/** Options — middleware options written once for every adapter (callbacks get the framework's request and `hdr`). */
export type Options = (hdr: Hdr) => Record<string, unknown>;

export interface Route {
  method: 'GET' | 'POST';
  path: string;
  /** limit — the route's middleware options; absent: the route is not limited. */
  limit?: Options;
}

export interface App {
  url: string;
  /** served — x-id of every request that reached a handler, in order. */
  served: string[];
  close(): Promise<void>;
}

export type Build = (routes: Route[]) => Promise<App>;

function reply(d: Decision | null | undefined, id: string | undefined): string {
  return JSON.stringify({ id: id ?? null, reason: d?.reason ?? null, delay: d?.delay ?? null });
}

/** status — a handler's answer status: the x-status header's, else 200. */
function status(header: string | undefined): number {
  return header === undefined ? 200 : Number(header);
}

function address(server: Server): string {
  const a = server.address() as AddressInfo;
  return `http://127.0.0.1:${a.port}`;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });
}

const nodeHdr: Hdr = (req, name) => {
  const v = (req as IncomingMessage).headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
};

export const buildNode: Build = async (routes) => {
  const served: string[] = [];
  const table = routes.map((r) => {
    const handler = (req: IncomingMessage, res: http.ServerResponse, d?: Decision) => {
      const id = nodeHdr(req, 'x-id');
      if (id) served.push(id);
      res.statusCode = status(nodeHdr(req, 'x-status'));
      res.setHeader('content-type', 'application/json');
      res.end(reply(d, id));
    };
    return { r, listener: r.limit ? nodeLimit(r.limit(nodeHdr) as unknown as NodeRateLimitOptions)(handler) : handler };
  });
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const hit = table.find((t) => t.r.method === req.method && t.r.path === path);
    if (!hit) { res.statusCode = 404; res.end(); return; }
    req.resume();
    hit.listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: address(server), served, close: () => closeServer(server) };
};

export const buildExpress: Build = async (routes) => {
  const served: string[] = [];
  const app = express();
  app.set('trust proxy', false);
  for (const r of routes) {
    const handler = (req: express.Request, res: express.Response) => {
      const id = req.get('x-id');
      if (id) served.push(id);
      res.status(status(req.get('x-status'))).type('application/json').send(reply(req.rateLimit, id));
    };
    const m = r.method === 'GET' ? app.get.bind(app) : app.post.bind(app);
    if (r.limit) m(r.path, expressLimit(r.limit(nodeHdr) as unknown as ExpressRateLimitOptions), handler);
    else m(r.path, handler);
  }
  const server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  return { url: address(server), served, close: () => closeServer(server) };
};

const fastifyHdr: Hdr = (req, name) => {
  const v = (req as { headers: Record<string, string | string[] | undefined> }).headers[name];
  return Array.isArray(v) ? v.join(', ') : v;
};

/** buildFastify — the plugin with `global: false`; each limited route brings its own policy in config.rateLimit. */
export const buildFastify: Build = async (routes) => {
  const served: string[] = [];
  const app = Fastify();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  await app.register(ratekeeperPlugin, { rules: '1000/s', global: false });
  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.path,
      config: r.limit ? { rateLimit: r.limit(fastifyHdr) as unknown as FastifyRouteRateLimitOptions } : {},
      handler: async (request, replyObj) => {
        const id = fastifyHdr(request, 'x-id');
        if (id) served.push(id);
        replyObj.code(status(fastifyHdr(request, 'x-status'))).type('application/json');
        return reply(request.rateLimit, id);
      },
    });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: address(app.server), served, close: () => app.close() };
};

const honoHdr: Hdr = (c, name) => (c as { req: { header(n: string): string | undefined } }).req.header(name);

export const buildHono: Build = async (routes) => {
  const served: string[] = [];
  const app = new Hono();
  for (const r of routes) {
    const handler = (c: import('hono').Context) => {
      const id = c.req.header('x-id');
      if (id) served.push(id);
      return c.body(reply(c.get('rateLimit'), id), status(c.req.header('x-status')) as 200, { 'content-type': 'application/json' });
    };
    const m = r.method === 'GET' ? app.get.bind(app) : app.post.bind(app);
    if (r.limit) m(r.path, honoLimit(r.limit(honoHdr) as unknown as HonoRateLimitOptions), handler);
    else m(r.path, handler);
  }
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s as Server));
  });
  return { url: address(server), served, close: () => closeServer(server) };
};

export const ADAPTERS: [string, Build][] = [['node', buildNode], ['express', buildExpress], ['fastify', buildFastify], ['hono', buildHono]];

/** Res — what the client saw. */
export interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json(): Record<string, unknown>;
  /** ms from sending to the end of the response */
  took: number;
}

/**
 * request — a real HTTP request: Node's fetch (undici), or node:http when the test chooses the local address
 * (any 127.x.y.z is loopback on Linux, so tests can be different peers; fetch cannot bind one without an undici
 * Agent, which is not a dependency).
 */
export async function request(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {}): Promise<Res> {
  if (init.localAddress !== undefined) return viaNodeHttp(url, init);
  const start = performance.now();
  const res = await fetch(url, { method: init.method ?? 'GET', headers: init.headers, body: init.body });
  const body = await res.text();
  return { status: res.status, headers: Object.fromEntries(res.headers), body, json: () => JSON.parse(body), took: performance.now() - start };
}

function viaNodeHttp(url: string, init: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string }): Promise<Res> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers = { ...init.headers };
    if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method: init.method ?? 'GET', headers,
      localAddress: init.localAddress, agent: false,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body), took: performance.now() - start });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
}
