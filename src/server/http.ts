import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createSecureServer } from 'node:https';
import { isUtf8 } from 'node:buffer';
import type { TlsOptions } from 'node:tls';
import type { Decision } from '../core/types.js';
import { RatekeeperError } from '../core/errors.js';
import { MAX_AMOUNT } from '../core/rules.js';
import { fastCheck, type CheckFields } from './checkBody.js';
import { jsonValuesOver } from './jsonScan.js';
import { BadRequest, preview, requestFromJson, wellFormed, type RlsRequest } from './rls.js';
import { fastRls } from './rlsBody.js';
import { MAX_BODY, fail, readBody, send, statusText, writeAuth, writeDecision, writeRls, type BodySink } from './httpAnswer.js';
import type { RateLimitService } from './service.js';
import type { Api, Metrics } from './metrics.js';

/** DECIMAL — what X-Ratekeeper-Cost may be: a decimal number, digits with an optional fraction. */
const DECIMAL = /^\d+(?:\.\d+)?$/;

/** Health — a /healthcheck answer: `ok` (200, else 500) and its body. */
export interface Health {
  ok: boolean;
  text: string;
}

/** HttpFrontOptions — what the HTTP listener answers with. */
export interface HttpFrontOptions {
  service: RateLimitService;
  metrics?: Metrics;
  /**
   * healthy — what /healthcheck answers now: 200 when `ok` (or true), else 500; `text` — the body (`OK` or `NOT OK`,
   * then the store's state, one fact a line).
   */
  healthy: () => boolean | Health | Promise<boolean | Health>;
  log: (line: string) => void;
  /**
   * requestTimeout — ms a request may take to arrive whole (headers and body) before it is answered 408 and its
   * connection closed: a client that trickles bytes (slowloris) holds a socket this long, not node's 5 minutes.
   * @default 10_000
   */
  requestTimeout?: number;
  /**
   * tls — HTTPS: the secure context and client-certificate options of node's https server (server/tls.ts's
   * secureOptions); absent: plain HTTP. The certificate is swapped with `server.setSecureContext`. A TLS handshake
   * must end within requestTimeout (node's default would let a silent connection hold a socket for 120 s).
   */
  tls?: TlsOptions;
}

/** POST, GET_HEAD, AUTH_METHODS — the methods an endpoint takes (constants: no array per request). */
const POST: readonly string[] = ['POST'];
const GET_HEAD: readonly string[] = ['GET', 'HEAD'];
const AUTH_METHODS: readonly string[] = ['GET', 'POST', 'HEAD'];

/**
 * HttpFront — the HTTP listener: `POST /json` (envoyproxy/ratelimit's JSON form of ShouldRateLimit), `POST /v1/check`
 * (the native API), `GET /healthcheck`, `GET /metrics`. Every malformed request is a 4xx naming what is wrong; the
 * server keeps serving after any request.
 */
export class HttpFront implements BodySink {
  readonly server: Server;
  /** inFlight — requests being answered (drained on shutdown). */
  inFlight = 0;
  port = 0;
  /** closing — close() was called: every answer from now on closes its connection. */
  private closing = false;

  constructor(private readonly options: HttpFrontOptions) {
    const timeout = options.requestTimeout ?? 10_000;
    const serverOptions = {
      keepAliveTimeout: 65_000, requestTimeout: timeout, headersTimeout: timeout,
      // how often node looks for requests past their timeout (its default, 30 s, would triple a 10 s timeout)
      connectionsCheckingInterval: Math.max(50, Math.min(1000, timeout / 4)),
    };
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.handle(req, res);
    this.server = options.tls === undefined ? createServer(serverOptions, handler) : createSecureServer({ ...serverOptions, handshakeTimeout: timeout, ...options.tls }, handler);
    // every header is read: node's default keeps the first 2 000 and drops the rest unseen, so a client could put its
    // own X-Ratekeeper-Key first and push a proxy's appended copy past it (/v1/auth's repeat check never saw it). The
    // header bytes stay bounded by node's maxHeaderSize (16 KiB: at most ~4 000 headers)
    this.server.maxHeadersCount = 0;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    // a keep-alive connection that brings a request during the drain is closed after its answer, not kept
    if (this.closing) res.setHeader('Connection', 'close');
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    switch (path) {
      case '/json':
        if (!this.method(req, res, POST)) return;
        readBody(req, res, this, 'json');
        return;
      case '/v1/check':
        if (!this.method(req, res, POST)) return;
        readBody(req, res, this, 'check');
        return;
      case '/v1/auth':
        if (!this.method(req, res, AUTH_METHODS)) return;
        req.resume();
        this.auth(req, res);
        return;
      case '/healthcheck':
        if (!this.method(req, res, GET_HEAD)) return;
        Promise.resolve()
          .then(() => this.options.healthy())
          .then((h) => (typeof h === 'boolean' ? { ok: h, text: h ? 'OK' : 'NOT OK' } : h), (e: unknown) => ({ ok: false, text: `NOT OK\n${String(e)}` }))
          .then((h) => send(res, h.ok ? 200 : 500, 'text/plain; charset=utf-8', h.text));
        return;
      case '/metrics': {
        if (!this.method(req, res, GET_HEAD)) return;
        const m = this.options.metrics;
        if (m === undefined) {
          fail(res, 404, 'path', 'metrics are off');
          return;
        }
        m.text().then((text) => send(res, 200, m.contentType, text), (e: unknown) => fail(res, 500, 'metrics', String(e)));
        return;
      }
      default:
        fail(res, 404, 'path', `no such endpoint ${JSON.stringify(path)}: POST /json, POST /v1/check, GET /v1/auth, GET /healthcheck, GET /metrics`);
    }
  }

  private method(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): boolean {
    if (allowed.includes(req.method ?? '')) return true;
    res.setHeader('Allow', allowed.join(', '));
    fail(res, 405, 'method', `${req.method} is not allowed here; use ${allowed.join(' or ')}`);
    req.resume();
    return false;
  }

  /**
   * answer — a whole body of `api`, read: scanned, parsed and decided (BodyRead's end). Answered in this tick when the
   * store is synchronous (the memory store): no promise between the body and the answer.
   */
  answer(raw: Buffer, res: ServerResponse, api: 'json' | 'check'): void {
    const metrics = this.options.metrics;
    const start = metrics === undefined ? 0 : performance.now();
    // a compact body is read from its bytes (checkBody.ts, rlsBody.ts): the same values JSON.parse would give. Such a
    // body is at most 4 KiB (fewer `{`, `[` and `,` than MAX_JSON_VALUES) and 5 deep: within jsonScan's bounds
    const fast = api === 'check' ? fastCheck(raw) : fastRls(raw);
    let body: unknown;
    if (fast === undefined) {
      // counted and its depth bounded before JSON.parse builds it: 500 000 `{}` cost 140–260 ms to parse (jsonScan.ts)
      const problem = jsonValuesOver(raw);
      if (problem !== undefined) {
        metrics?.badRequest(api);
        fail(res, 400, problem.field, problem.message);
        this.inFlight--;
        return;
      }
      // decoded, bytes that are not UTF-8 would become U+FFFD, and distinct keys one counter (gRPC and /v1/auth refuse
      // them too); the fast paths read printable ASCII only
      if (!isUtf8(raw)) {
        metrics?.badRequest(api);
        fail(res, 400, 'body', 'is not valid UTF-8 (decoded, distinct keys would become one counter)');
        this.inFlight--;
        return;
      }
      try {
        body = JSON.parse(raw.toString());
      } catch (e) {
        metrics?.badRequest(api);
        fail(res, 400, 'body', `is not JSON: ${(e as Error).message}`);
        this.inFlight--;
        return;
      }
    }
    let p: void | Promise<void>;
    try {
      if (api === 'json') p = this.json(fast === undefined ? requestFromJson(body) : (fast as RlsRequest), res);
      else if (fast === undefined) p = this.check(body, res);
      else {
        const c = fast as CheckFields;
        p = this.checkFields(c.policy, c.key, c.cost, res);
      }
    } catch (e) {
      this.answerFailed(res, api, e, start);
      return;
    }
    if (p === undefined) {
      this.answered(res, api, start);
      return;
    }
    p.then(() => this.answered(res, api, start), (e: unknown) => this.answerFailed(res, api, e, start));
  }

  /** answered — a call answered: timed (from `start`, performance.now()) and no longer in flight. */
  private answered(res: ServerResponse, api: Api, start: number): void {
    this.options.metrics?.answered(api, statusText(res.statusCode), start);
    this.inFlight--;
  }

  private answerFailed(res: ServerResponse, api: Api, e: unknown, start: number): void {
    this.failed(res, api, e);
    this.answered(res, api, start);
  }

  /** tooLarge — a body past MAX_BODY: 413, and its connection closed (BodyRead's data). */
  tooLarge(res: ServerResponse, api: Api): void {
    this.options.metrics?.badRequest(api);
    res.setHeader('Connection', 'close');
    fail(res, 413, 'body', `is larger than ${MAX_BODY} bytes`);
  }

  /** json — answers at once when the store is synchronous, else once the decision is made. Throws on bad input. */
  private json(request: RlsRequest, res: ServerResponse): void | Promise<void> {
    const r = this.options.service.decide(request);
    if (r instanceof Promise) return r.then((x) => writeRls(res, x));
    writeRls(res, r);
  }

  private check(body: unknown, res: ServerResponse): void | Promise<void> {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequest('body', 'must be a JSON object { "policy", "key", "cost"? }');
    const b = body as Record<string, unknown>;
    for (const k in b) if (k !== 'policy' && k !== 'key' && k !== 'cost') throw new BadRequest(k, 'is not a field of a check: { "policy", "key", "cost"? }');
    return this.checkFields(b.policy, b.key, b.cost, res);
  }

  /** checkFields — a check's members (as JSON.parse gives them, or fastCheck): checked, decided, answered. Throws on bad input. */
  private checkFields(policy: unknown, key: unknown, costField: unknown, res: ServerResponse): void | Promise<void> {
    if (typeof policy !== 'string' || policy === '') throw new BadRequest('policy', `must be a non-empty string, got ${preview(policy)}`);
    if (typeof key !== 'string' || key === '') throw new BadRequest('key', `must be a non-empty string, got ${preview(key)}`);
    if (!wellFormed(key)) throw new BadRequest('key', 'has a lone surrogate: it is not a Unicode string (distinct keys would share one counter)');
    const cost = costField === undefined ? 1 : costField;
    if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || cost > MAX_AMOUNT) throw new BadRequest('cost', `must be a finite number from 0 to ${MAX_AMOUNT}, got ${preview(costField)}`);
    const service = this.options.service;
    const d = service.checkNow(policy, key, cost);
    if (d instanceof Promise) return d.then((x) => writeDecision(res, service.fields(policy, x), x));
    writeDecision(res, service.fields(policy, d), d);
  }

  /**
   * auth — the native check for a proxy's sub-request (nginx `auth_request`): the policy, key and cost come in the
   * headers `X-Ratekeeper-Policy`, `X-Ratekeeper-Key` and `X-Ratekeeper-Cost` (no body), and the answer is 200 when
   * admitted and 403 when refused (what auth_request understands), with the RateLimit fields and Retry-After for the
   * proxy to copy into its 429, and no body: a proxy that does not read the answer's body (Caddy's forward_auth)
   * closes the connection instead of reusing it, one TCP connection per check. Timed under api="auth".
   */
  private auth(req: IncomingMessage, res: ServerResponse): void {
    this.inFlight++;
    const start = this.options.metrics === undefined ? 0 : performance.now();
    let policy: string;
    let d: Decision | Promise<Decision>;
    try {
      const h = authHeaders(req.rawHeaders);
      // both as UTF-8: a policy named `café` in the configuration is the one /v1/check reaches
      const p = headerText(h[0], 'X-Ratekeeper-Policy');
      const key = headerText(h[1], 'X-Ratekeeper-Key');
      const costText = h[2];
      if (p === undefined || p === '') throw new BadRequest('X-Ratekeeper-Policy', 'header is missing');
      if (key === undefined || key === '') throw new BadRequest('X-Ratekeeper-Key', 'header is missing');
      // a decimal number only: Number() would also read 0x10, 0b11 and 1e2
      const cost = costText === undefined ? 1 : DECIMAL.test(costText) ? Number(costText) : NaN;
      if (!Number.isFinite(cost) || cost < 0 || cost > MAX_AMOUNT) throw new BadRequest('X-Ratekeeper-Cost', `must be a finite number from 0 to ${MAX_AMOUNT}, got ${JSON.stringify(costText)}`);
      policy = p;
      // answered in this tick when the store is synchronous (the memory store), as /v1/check
      d = this.options.service.checkNow(policy, key, cost, 'X-Ratekeeper-Key');
    } catch (e) {
      this.answerFailed(res, 'auth', e, start);
      return;
    }
    if (d instanceof Promise) {
      d.then((x) => {
        writeAuth(res, this.options.service.fields(policy, x), x);
        this.answered(res, 'auth', start);
      }, (e: unknown) => this.answerFailed(res, 'auth', e, start));
      return;
    }
    writeAuth(res, this.options.service.fields(policy, d), d);
    this.answered(res, 'auth', start);
  }

  /**
   * failed — a call that threw: a 400 naming the field for bad input, else a 500 (logged). A RangeError (a stack
   * overflow, a string or array past V8's size) can only come from the shape of what the client sent — every bound of
   * the service's own is checked before it — so it is the body's fault: a 400 naming the body, not a stack trace.
   */
  private failed(res: ServerResponse, api: Api, e: unknown): void {
    const bad = e instanceof BadRequest || (e instanceof RatekeeperError && e.code === 'ERR_ARGUMENT');
    if (bad) {
      this.options.metrics?.badRequest(api);
      fail(res, 400, e instanceof BadRequest ? e.field : 'body', (e as Error).message);
    } else if (e instanceof RangeError) {
      this.options.metrics?.badRequest(api);
      fail(res, 400, 'body', `cannot be processed (${e.message}): too deeply nested or too large`);
    } else {
      this.options.log(`http: ${api} failed: ${(e as Error)?.stack ?? String(e)}`);
      fail(res, 500, 'server', (e as Error)?.message ?? String(e));
    }
  }

  /** listen — binds host:port (0: any free port) and resolves with the port. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as { port: number }).port;
        resolve(this.port);
      });
    });
  }

  /** close — stops accepting connections, lets requests in flight finish (forced after `graceMs`), then resolves. */
  close(graceMs = 10_000): Promise<void> {
    this.closing = true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.server.closeAllConnections();
      }, graceMs);
      timer.unref();
      this.server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      this.server.closeIdleConnections();
      const idle = setInterval(() => this.server.closeIdleConnections(), 50);
      idle.unref();
      this.server.once('close', () => clearInterval(idle));
    });
  }
}

/** NON_ASCII — a character past U+007F: node read the header's bytes as Latin-1. */
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * headerText — a header's value as the UTF-8 text its bytes spell (node gives each byte as one Latin-1 character:
 * `é` sent as UTF-8 arrived as `Ã©`, another client than the `é` of /v1/check, /json and gRPC), or a BadRequest
 * naming `field` when the bytes are not UTF-8 (decoded, they would become U+FFFD, and distinct keys one counter).
 * ASCII, the usual case, is returned as it is after one regex test.
 */
function headerText(v: string | undefined, field: string): string | undefined {
  if (v === undefined || !NON_ASCII.test(v)) return v;
  const bytes = Buffer.from(v, 'latin1');
  if (!isUtf8(bytes)) throw new BadRequest(field, 'header is not valid UTF-8');
  return bytes.toString('utf8');
}

/** AUTH_HEADERS — the headers GET /v1/auth reads, as a proxy spells them in its messages. */
const AUTH_HEADERS = ['X-Ratekeeper-Policy', 'X-Ratekeeper-Key', 'X-Ratekeeper-Cost'] as const;
const AUTH_LOWER: readonly string[] = AUTH_HEADERS.map((n) => n.toLowerCase());

/**
 * authHeaders — the values of AUTH_HEADERS in `raw` (IncomingMessage.rawHeaders: name, value, name, value …), in
 * their order, undefined where absent; a BadRequest naming the first one sent more than once (node would join the
 * copies with ", " into one key of its own: a client that adds its own copy would get a fresh budget). One pass over
 * the raw list: node's `req.headers` object (every header's name lower-cased, copied) is never built.
 */
function authHeaders(raw: readonly string[]): [string | undefined, string | undefined, string | undefined] {
  const out: [string | undefined, string | undefined, string | undefined] = [undefined, undefined, undefined];
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const n = raw[i];
    if (n.length !== 16 && n.length !== 17 && n.length !== 19) continue;
    const lower = n.toLowerCase();
    for (let j = 0; j < AUTH_HEADERS.length; j++) {
      if (lower !== AUTH_LOWER[j]) continue;
      if ((seen & (1 << j)) !== 0) throw new BadRequest(AUTH_HEADERS[j], 'header is sent more than once: node would join the copies with ", " into one key of its own (a client that adds its own copy would get a fresh budget)');
      seen |= 1 << j;
      out[j] = raw[i + 1];
    }
  }
  return out;
}
