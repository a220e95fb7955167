import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Limiter } from '../limiter.js';
import { checkOptions } from '../core/options.js';
import { RatekeeperError, show } from '../core/errors.js';
import { BadInput, SECURITY_HEADERS, body, fail, safeJson, send } from './http.js';
import { hostRefusal, isLoopback, jsonRefusal, siteRefusal, type AllowedHosts } from './guard.js';
import { loadAssets } from './page.js';
import * as api from './api.js';
import type { KeyOf } from './api.js';

export type { KeyOf } from './api.js';
import { EventHub } from './events.js';
import { keyViewer, type KeyView } from './keys.js';
import { storeView } from './store.js';

/**
 * Limiters — the named limiters the admin works on: a Map, a plain object, or a function returning them now (re-read
 * on every request). The function may give each limiter a third element, a {@link KeyOf}: how a key an operator
 * types is read for that limiter (the service gives one to limits whose descriptors have one entry).
 */
export type Limiters = ReadonlyMap<string, Limiter> | Readonly<Record<string, Limiter>> | (() => Iterable<[string, Limiter] | [string, Limiter, KeyOf | undefined]>);

/** ConfigView — what GET /admin/config shows: the configuration as text or as an object, when it was loaded, from which files. */
export interface ConfigView {
  text?: string;
  object?: unknown;
  /** loadedAt — when the configuration was (re)loaded: ms since the epoch, a Date, or an ISO string. */
  loadedAt: number | string | Date;
  files: string[];
}

/** AdminLogEntry — one change made through the admin API: who, what, when. */
export interface AdminLogEntry {
  /** time — ISO 8601. */
  time: string;
  /** who — `token:<first 8 hex of the token's SHA-256>` or `loopback` (no token); `from` — the peer's address. */
  who: string;
  from: string | undefined;
  what: api.Change['what'];
  key: string;
  limiters: string[];
  /** keys — by limiter, the key as it read `key`, where one read it otherwise (a one-entry limit's bare value). */
  keys?: Record<string, string>;
  /** for — ms, when the block or exemption has an end. */
  for?: number;
  reason?: string;
}

/** AdminOptions — what the admin handler serves. */
export interface AdminOptions {
  /**
   * limiters — the named limiters: `new Map([['api', lim]])`, `{ api: lim }`, or `() => service.limiters()` (read on
   * every request, so a configuration reload is seen at once). Key endpoints act on all of them, or on the one named
   * by `?limiter=` (the body's `limiter` for a POST).
   */
  limiters: Limiters;
  /**
   * token — the bearer token every /admin/ request must carry (`Authorization: Bearer <token>`), compared in
   * constant time. Without one, the API answers only requests that arrived on a loopback address (403 otherwise).
   */
  token?: string;
  /** config — the running configuration, for GET /admin/config (404 without). */
  config?: () => ConfigView | Promise<ConfigView>;
  /** log — where each change goes. @default one JSON line on stderr */
  log?: (entry: AdminLogEntry) => void;
  /**
   * allowedHosts — the `Host` names the handler answers besides the address the connection arrived at (its IP and
   * port, and `localhost` on loopback): `'admin.example.com'` (any port) or `'admin.example.com:8443'`; `'*'` answers
   * any Host. Another Host gets 421: a page that points a name of its own at the listener (DNS rebinding) is refused.
   * @default '*' with a token (the token is what protects it, and the app knows its names); [] without one (only
   * the listener's own address: a loopback listener without a token is what a web page would try to reach)
   * @example adminHandler({ limiters, token, allowedHosts: ['ops.example.com'] })
   */
  allowedHosts?: AllowedHosts;
  /**
   * maxEventClients — the most live tails (`GET /admin/events`) open at once; one more gets 503. Every tail is fed the
   * same serialized events, so the cost of a decision's event does not grow with them, but each is a socket. @default 64
   */
  maxEventClients?: number;
  /**
   * logKeys — how client keys appear in the change log and the live tail (`GET /admin/events`): `plain`, `hash`
   * (`sha256:` + 12 hex digits, or `hmac:` with `logKeysSecret`) or `redact` (keys.ts). The API's answers keep the real
   * keys: an operator acts on them. @default 'plain'
   */
  logKeys?: KeyView;
  /** logKeysSecret — the HMAC key of `logKeys: 'hash'` (without it: plain SHA-256, reversible for guessable keys). */
  logKeysSecret?: string;
}

/** AdminHandler — a node:http request handler; `next` (Express, Connect) is called for paths it does not serve. */
export type AdminHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

/** ADMIN_OPTIONS — the names adminHandler's options may have (serveAdmin's add host and port). */
export const ADMIN_OPTIONS: ReadonlySet<string> = new Set(['limiters', 'token', 'config', 'log', 'allowedHosts', 'maxEventClients', 'logKeys', 'logKeysSecret']);

/** MIN_TOKEN — the shortest token accepted, characters: a bearer token is a password for blocking anyone. */
export const MIN_TOKEN = 16;

/** defaultLog — one JSON line per change on stderr. */
const defaultLog = (e: AdminLogEntry): void => {
  process.stderr.write(`${safeJson({ ratekeeper: 'admin', ...e })}\n`);
};

/** digest — SHA-256 of a token: both sides of the comparison have the same length, so timingSafeEqual applies. */
const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** named — the limiters as [name, limiter] pairs, now. */
function named(limiters: Limiters): api.Named {
  if (typeof limiters === 'function') return [...limiters()];
  if (limiters instanceof Map) return [...limiters.entries()];
  return Object.entries(limiters as Record<string, Limiter>);
}

/**
 * adminHandler — the operators' view as one framework-neutral request handler: the JSON API under /admin/, the
 * live tail (SSE), and the dashboard at / with its assets under /assets/. Mount it on node:http, Express
 * (`app.use('/ops', handler)`) or Fastify (see docs/admin.md). No cookies and no CORS headers. A page of another
 * origin can still make a browser send requests (a form, a `no-cors` fetch) and point a name at the listener (DNS
 * rebinding): see guard.ts for what refuses them (Host, Sec-Fetch-Site / Origin, JSON-only changes).
 */
export function adminHandler(options: AdminOptions): AdminHandler {
  if (typeof options !== 'object' || options === null) throw new RatekeeperError(`adminHandler takes an options object like { limiters }, got ${show(options)}`);
  checkOptions(options, ADMIN_OPTIONS, 'adminHandler');
  const { limiters, token, config } = options;
  const ok = typeof limiters === 'function' || limiters instanceof Map || (typeof limiters === 'object' && limiters !== null);
  if (!ok) throw new RatekeeperError(`adminHandler.limiters must be a Map, an object or a function returning [name, limiter] pairs, got ${show(limiters)}`);
  if (token !== undefined && (typeof token !== 'string' || token.length < MIN_TOKEN)) {
    throw new RatekeeperError(`adminHandler.token must be a string of at least ${MIN_TOKEN} characters, got ${typeof token === 'string' ? `one of ${token.length}` : show(token)}`);
  }
  if (config !== undefined && typeof config !== 'function') throw new RatekeeperError(`adminHandler.config must be a function returning { text or object, loadedAt, files }, got ${show(config)}`);
  const log = options.log ?? defaultLog;
  if (typeof log !== 'function') throw new RatekeeperError(`adminHandler.log must be a function, got ${show(log)}`);
  const allowedHosts = options.allowedHosts ?? (token === undefined ? [] : '*');
  if (allowedHosts !== '*' && (!Array.isArray(allowedHosts) || allowedHosts.some((h) => typeof h !== 'string' || !/^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+)(:\d{1,5})?$/.test(h)))) {
    throw new RatekeeperError(`adminHandler.allowedHosts must be '*' or a list of host names (with an optional :port), got ${show(allowedHosts)}`);
  }
  const maxEventClients = options.maxEventClients ?? 64;
  if (!Number.isSafeInteger(maxEventClients) || maxEventClients < 0) throw new RatekeeperError(`adminHandler.maxEventClients must be an integer >= 0, got ${show(options.maxEventClients)}`);
  /** shown — how a key is written out (logKeys), undefined: as it is. */
  const shown = keyViewer(options.logKeys ?? 'plain', options.logKeysSecret);
  const hub = new EventHub(maxEventClients, shown);
  const expected = token === undefined ? undefined : digest(token);
  const who = token === undefined ? 'loopback' : `token:${digest(token).toString('hex').slice(0, 8)}`;
  const assets = loadAssets();

  /** authorized — whether the request may use the API; replies 401/403 itself when not. */
  const authorized = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (expected === undefined) {
      if (isLoopback(req.socket.localAddress)) return true;
      fail(res, 403, 'the admin API needs a token when it is reached off loopback: give adminHandler a token');
      return false;
    }
    const m = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? '');
    if (m === null || !timingSafeEqual(digest(m[1]), expected)) {
      fail(res, 401, m === null ? 'send the admin token: Authorization: Bearer <token>' : 'wrong admin token', undefined, { 'www-authenticate': 'Bearer realm="ratekeeper admin"' });
      return false;
    }
    return true;
  };

  const changed = (req: IncomingMessage, c: api.Change): void => {
    const e: AdminLogEntry = { time: new Date().toISOString(), who, from: req.socket.remoteAddress, ...c };
    if (shown !== undefined) {
      e.key = shown(e.key);
      if (e.keys !== undefined) e.keys = Object.fromEntries(Object.entries(e.keys).map(([l, k]) => [l, shown(k)]));
    }
    try {
      log(e);
    } catch {
      // a failing log must not turn a done change into an error reply
    }
  };

  const route = async (req: IncomingMessage, res: ServerResponse, url: URL, parts: string[]): Promise<void> => {
    const method = req.method ?? 'GET';
    const allow = (...methods: string[]): boolean => {
      if (methods.includes(method)) return true;
      fail(res, 405, `${method} is not allowed here: use ${methods.join(' or ')}`, undefined, { allow: methods.join(', ') });
      return false;
    };
    const q = url.searchParams;
    const all = (): api.Named => named(limiters);
    const key = (raw: string): string => {
      try {
        return decodeURIComponent(raw);
      } catch {
        throw new BadInput('key', 'the key in the path is not valid percent-encoding');
      }
    };
    const [, section, arg, tail, ...more] = parts;
    if (more.length > 0) return fail(res, 404, `no such path: ${url.pathname}`);
    switch (section) {
      case 'top':
        if (arg !== undefined) break;
        if (allow('GET')) send(res, 200, await api.top(api.pick(all(), q.get('limiter')), q));
        return;
      case 'keys':
        if (arg === undefined || arg === '') break;
        if (tail === undefined) {
          if (allow('GET')) send(res, 200, await api.inspect(api.pick(all(), q.get('limiter')), key(arg)));
          return;
        }
        if (tail !== 'reset') break;
        if (allow('POST')) {
          const c = await api.reset(api.pick(all(), q.get('limiter')), key(arg));
          changed(req, c);
          send(res, 200, c);
        }
        return;
      case 'blocks':
      case 'exemptions': {
        if (tail !== undefined) break;
        const kind = section === 'blocks' ? 'block' : 'exempt';
        if (arg === undefined) {
          if (!allow('GET', 'POST')) return;
          if (method === 'GET') return send(res, 200, await api.overrides(api.pick(all(), q.get('limiter')), kind));
          const c = await api.add(all(), kind, await body(req));
          changed(req, c);
          return send(res, 201, c);
        }
        if (arg === '') break;
        if (allow('DELETE')) {
          const c = await api.remove(api.pick(all(), q.get('limiter')), kind, key(arg));
          changed(req, c);
          send(res, 200, c);
        }
        return;
      }
      case 'stats':
        if (arg !== undefined) break;
        if (allow('GET')) send(res, 200, api.stats(api.pick(all(), q.get('limiter')), q));
        return;
      case 'store':
        if (arg !== undefined) break;
        if (allow('GET')) send(res, 200, storeView(api.pick(all(), q.get('limiter'))));
        return;
      case 'events':
        if (arg !== undefined) break;
        if (allow('GET')) {
          const picked = q.get('limiter') ?? '';
          api.pick(all(), picked);
          hub.join(req, res, picked, () => api.pick(all(), picked));
        }
        return;
      case 'config':
        if (arg !== undefined) break;
        if (!allow('GET')) return;
        if (config === undefined) return fail(res, 404, 'no configuration: this admin handler was not given one (the service gives its own)');
        {
          const c = await config();
          const loadedAt = c.loadedAt instanceof Date ? c.loadedAt.toISOString() : typeof c.loadedAt === 'number' ? new Date(c.loadedAt).toISOString() : c.loadedAt;
          return send(res, 200, { ...c, loadedAt });
        }
    }
    fail(res, 404, `no such path: ${url.pathname}`);
  };

  return (req, res, next) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://admin.invalid');
    } catch {
      return fail(res, 400, 'bad request path', 'path');
    }
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const wrongHost = hostRefusal(req, allowedHosts);
    if (wrongHost !== undefined) return fail(res, 421, wrongHost, 'host');
    if (path === '/' || path === '/index.html') {
      if (method !== 'GET' && method !== 'HEAD') return fail(res, 405, `${method} is not allowed here: use GET`, undefined, { allow: 'GET, HEAD' });
      // mounted under a prefix without the trailing slash (Express: /ops): the page's relative links need it
      const original = (req as { originalUrl?: string }).originalUrl;
      if (original !== undefined && path === '/' && !original.split('?')[0].endsWith('/')) {
        res.writeHead(308, { ...SECURITY_HEADERS, location: `${original.split('?')[0]}/` });
        res.end();
        return;
      }
      return asset(res, assets.get('index.html'), method);
    }
    if (path.startsWith('/assets/')) {
      if (method !== 'GET' && method !== 'HEAD') return fail(res, 405, `${method} is not allowed here: use GET`, undefined, { allow: 'GET, HEAD' });
      const a = assets.get(path.slice('/assets/'.length));
      return a === undefined ? fail(res, 404, `no such asset: ${path}`) : asset(res, a, method);
    }
    if (path !== '/admin' && !path.startsWith('/admin/')) {
      if (next !== undefined) return next();
      return fail(res, 404, `no such path: ${path}`);
    }
    const foreign = siteRefusal(req);
    if (foreign !== undefined) return fail(res, 403, foreign, 'origin');
    if (method !== 'GET' && method !== 'HEAD') {
      const notJson = jsonRefusal(req);
      if (notJson !== undefined) return fail(res, 415, notJson, 'content-type');
    }
    if (!authorized(req, res)) return;
    route(req, res, url, path.slice('/admin'.length).split('/')).catch((e: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (e instanceof BadInput) return fail(res, e.status, e.message, e.field);
      fail(res, 503, `the store did not answer: ${e instanceof Error ? e.message : String(e)}`);
    });
  };
}

/** asset — a file of the page, cacheable for a short while (the page itself never: it is tiny). */
function asset(res: ServerResponse, a: { type: string; body: Buffer } | undefined, method: string): void {
  if (a === undefined) return fail(res, 404, 'no such asset');
  res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': a.type, 'content-length': String(a.body.length), 'cache-control': 'no-cache' });
  res.end(method === 'HEAD' ? undefined : a.body);
}
