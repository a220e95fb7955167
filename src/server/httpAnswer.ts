/**
 * server/httpAnswer — how the HTTP listener reads a request's body and writes its answers: BodyRead (a body of at
 * most MAX_BODY bytes), send and fail (status, type, length, body), the native Decision (writeDecision, writeAuth, with
 * the RateLimit fields) and envoyproxy/ratelimit's /json answer (writeRls). The request's translation stays in http.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '../core/types.js';
import { seconds } from '../http/headers.js';
import { responseJson, type RlsResponse } from './rls.js';
import type { Api } from './metrics.js';

/** MAX_BODY — the largest request body read, in bytes (gRPC's default message limit); larger is a 413. */
export const MAX_BODY = 4 * 1024 * 1024;

/** STATUS_TEXT — the status codes the listener answers, as the latency histogram's `code` label. */
const STATUS_TEXT: Record<number, string> = { 200: '200', 400: '400', 403: '403', 404: '404', 413: '413', 429: '429', 500: '500' };

/** statusText — `code` as the histogram's label (no string built per answer for the usual codes). */
export function statusText(code: number): string {
  return STATUS_TEXT[code] ?? String(code);
}

/** BodySink — what a BodyRead hands its body to (HttpFront): the count in flight, the 413, the answer. */
export interface BodySink {
  inFlight: number;
  tooLarge(res: ServerResponse, api: Api): void;
  answer(raw: Buffer, res: ServerResponse, api: 'json' | 'check'): void;
}

/** RateLimitFields — the RateLimit-Policy and RateLimit header values of a decision (RateLimitService.fields). */
export interface RateLimitFields {
  policy: string;
  limit: string;
}

/**
 * BodyRead — one request body being read: its chunks (at most MAX_BODY bytes), then handed to its BodySink's answer
 * (HttpFront). The request's listeners (`onData`, `onError`, `onEnd`) are three functions shared by every request:
 * each finds its read on the request (`this`, the emitter) under READ, so a request costs one object, not three
 * closures besides.
 */
class BodyRead {
  chunks: Buffer[] | undefined = undefined;
  first: Buffer | undefined = undefined;
  size = 0;
  /** over — the body passed MAX_BODY (answered 413) or the request failed: nothing more is read or answered. */
  over = false;
  /**
   * settled — the read is over (its `end`; its `error`: a client gone mid-body; the 413 of a body past MAX_BODY):
   * counted out of flight once.
   */
  settled = false;

  constructor(readonly front: BodySink, readonly res: ServerResponse, readonly api: 'json' | 'check') {}
}

/** READ — where a request being read keeps its BodyRead (one property, the same on every request). */
const READ = Symbol('ratekeeper.bodyRead');
type Reading = IncomingMessage & { [READ]: BodyRead };

function onData(this: Reading, c: Buffer): void {
  const r = this[READ];
  r.size += c.length;
  if (r.size > MAX_BODY) {
    if (!r.over) {
      r.over = true;
      r.front.tooLarge(r.res, r.api);
      // the 413 answers it: out of flight now (once the 413 is sent, node emits neither `end` nor `error` nor
      // `close` for a request whose client goes away before the rest of its body)
      if (!r.settled) {
        r.settled = true;
        r.front.inFlight--;
      }
    }
    return;
  }
  // one chunk (the common case: a small body arrives with its headers) is kept without an array
  if (r.first === undefined) r.first = c;
  else (r.chunks ??= [r.first]).push(c);
}

function onError(this: Reading): void {
  const r = this[READ];
  r.over = true;
  if (r.settled) return;
  r.settled = true;
  r.front.inFlight--;
}

function onEnd(this: Reading): void {
  const r = this[READ];
  // settled already when it went over MAX_BODY (413) or failed
  if (r.settled) return;
  r.settled = true;
  const raw = r.chunks !== undefined ? Buffer.concat(r.chunks, r.size) : r.first ?? EMPTY;
  r.front.answer(raw, r.res, r.api);
}

const EMPTY = Buffer.alloc(0);

/**
 * readBody — reads `req`'s JSON body (at most MAX_BODY bytes), then hands it to `sink.answer` as `api`; counted in
 * flight from now. The request's state is one {@link BodyRead}; its listeners are shared functions (no closure per
 * request).
 */
export function readBody(req: IncomingMessage, res: ServerResponse, sink: BodySink, api: 'json' | 'check'): void {
  sink.inFlight++;
  (req as Reading)[READ] = new BodyRead(sink, res, api);
  req.on('data', onData);
  req.on('error', onError);
  req.on('end', onEnd);
}

/**
 * writeDecision — /v1/check's answer: 200 when admitted, 429 when refused, the RateLimit fields (`f`) and Retry-After
 * in its headers, the Decision as JSON in its body. The header list is built whole (one array, no growth) for the
 * usual answers: admitted with its fields.
 */
export function writeDecision(res: ServerResponse, f: RateLimitFields | undefined, d: Decision): void {
  if (res.headersSent) return;
  const body = decisionJson(d);
  const length = Buffer.byteLength(body);
  const h = d.allowed && f !== undefined
    ? ['RateLimit-Policy', f.policy, 'RateLimit', f.limit, 'Content-Type', 'application/json', 'Content-Length', length]
    : [...decisionHeaders(f, d), 'Content-Type', 'application/json', 'Content-Length', length];
  writeAnswer(res, d.allowed ? 200 : 429, h, body);
}

/**
 * writeAuth — /v1/auth's answer: 200 when admitted, 403 when refused, the decision in its headers and no body (a
 * proxy keeps its connection: Caddy opened a new one per check while a body came with the answer).
 */
export function writeAuth(res: ServerResponse, f: RateLimitFields | undefined, d: Decision): void {
  if (res.headersSent) return;
  const h = d.allowed && f !== undefined
    ? ['RateLimit-Policy', f.policy, 'RateLimit', f.limit, 'Content-Length', 0]
    : [...decisionHeaders(f, d), 'Content-Length', 0];
  res.writeHead(d.allowed ? 200 : 403, h);
  res.end();
}

/**
 * decisionHeaders — RateLimit-Policy, RateLimit (`f`, the service's fields for the policy) and (when refused)
 * Retry-After for a native decision, as a flat list (name, value, …) for writeHead.
 */
function decisionHeaders(f: RateLimitFields | undefined, d: Decision): (string | number)[] {
  const h: (string | number)[] = f === undefined ? [] : ['RateLimit-Policy', f.policy, 'RateLimit', f.limit];
  if (!d.allowed) {
    const s = seconds(d.retryAfter);
    if (s !== undefined) h.push('Retry-After', String(s));
  }
  return h;
}

/** writeRls — an RLS response as envoyproxy/ratelimit's /json answers it: 200 OK, 429 OVER_LIMIT, 500 otherwise. */
export function writeRls(res: ServerResponse, r: RlsResponse): void {
  send(res, r.overall_code === 'OVER_LIMIT' ? 429 : r.overall_code === 'OK' ? 200 : 500, 'application/json', responseJson(r));
}

/**
 * decisionJson — a Decision as JSON; an infinite wait (a block without end, a cost no rule can ever admit) is null,
 * as is any other number JSON cannot hold (NaN, -Infinity: JSON.stringify's null), so the answer always parses.
 */
export function decisionJson(d: Decision): string {
  if (!finiteDecision(d)) return JSON.stringify(d);
  return d.blockReason === undefined && d.fallback === undefined ? decisionText(d) : JSON.stringify(d);
}

/**
 * finiteDecision — every number decisionText writes is finite. Template literals write NaN and Infinity as the words
 * (not JSON); JSON.stringify writes them null. Only a wait is infinite by design, the rest is defence in depth.
 */
function finiteDecision(d: Decision): boolean {
  if (!(Number.isFinite(d.limit) && Number.isFinite(d.remaining) && Number.isFinite(d.retryAfter) && Number.isFinite(d.resetAfter))) return false;
  if ((d.rate !== undefined && !Number.isFinite(d.rate)) || (d.delay !== undefined && !Number.isFinite(d.delay))) return false;
  const rules = d.rules;
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    if (!(Number.isFinite(r.limit) && Number.isFinite(r.remaining) && Number.isFinite(r.retryAfter) && Number.isFinite(r.resetAfter))) return false;
    if ((r.rate !== undefined && !Number.isFinite(r.rate)) || (r.delay !== undefined && !Number.isFinite(r.delay))) return false;
  }
  return true;
}

/**
 * decisionText — JSON.stringify(d), byte for byte, for a decision of finite numbers without blockReason or fallback,
 * written by hand: a third of JSON.stringify's time (which looks up every key and checks every value's type). The
 * members in the order the library builds a Decision and a RuleOutcome; `rate` and `delay` only when defined.
 * A test holds it to JSON.stringify for every kind of decision (test/server/speed.test.ts).
 */
function decisionText(d: Decision): string {
  let s = `{"allowed":${d.allowed},"reason":"${d.reason}","limit":${d.limit},"remaining":${d.remaining},"retryAfter":${d.retryAfter},"resetAfter":${d.resetAfter}`;
  if (d.rate !== undefined) s += `,"rate":${d.rate}`;
  if (d.delay !== undefined) s += `,"delay":${d.delay}`;
  s += ',"rules":[';
  const rules = d.rules;
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    s += `${i === 0 ? '' : ','}{"name":${nameJson(r.name)},"algorithm":"${r.algorithm}","allowed":${r.allowed},"limit":${r.limit},"remaining":${r.remaining},"retryAfter":${r.retryAfter},"resetAfter":${r.resetAfter}`;
    if (r.rate !== undefined) s += `,"rate":${r.rate}`;
    if (r.delay !== undefined) s += `,"delay":${r.delay}`;
    s += '}';
  }
  return `${s}]}`;
}

/**
 * nameJson — JSON.stringify(name): a rule's name, the same string in every decision of its policy, written once and
 * given back while the same name comes (a one-entry cache: the text depends on the name's characters only).
 */
function nameJson(name: string): string {
  if (name !== lastName) {
    lastNameJson = JSON.stringify(name);
    lastName = name;
  }
  return lastNameJson;
}
let lastName = '';
let lastNameJson = '""';

/** send — an answer of `status` with a body of `type` (and its Content-Length); nothing when one was already sent. */
export function send(res: ServerResponse, status: number, type: string, body: string): void {
  if (res.headersSent) return;
  writeAnswer(res, status, ['Content-Type', type, 'Content-Length', Buffer.byteLength(body)], body);
}

/**
 * writeAnswer — the status line, `headers` (name, value, …; Content-Length among them) and `body` in one write(2):
 * `res.end(body)` hands the socket two chunks, the head with the body, then an empty one that carries the answer's
 * end, and node writes them with writev(2) through a WriteWrap each time (a bare node:http server's way: ~3 µs of
 * CPU per answer more, measured in docs/server.md). Here the socket is corked around one `res.write`, so the head and
 * the body go out as one string (node joins them) written at once; `res.end()` then has nothing left to write. Where
 * that cannot hold — a HEAD request (no body is written), a response queued behind a pipelined one (no socket yet),
 * a socket corked by someone else — it is `res.end(body)`, as node does it.
 */
function writeAnswer(res: ServerResponse, status: number, headers: (string | number)[], body: string): void {
  res.writeHead(status, headers);
  const socket = res.socket;
  if (body.length === 0 || socket === null || socket.writableCorked !== 0 || res.req.method === 'HEAD') {
    res.end(body);
    return;
  }
  socket.cork();
  res.write(body);
  socket.uncork();
  res.end();
}

export function fail(res: ServerResponse, status: number, field: string, message: string): void {
  send(res, status, 'application/json', JSON.stringify({ error: message.startsWith(`${field}:`) ? message : `${field}: ${message}`, field }));
}
