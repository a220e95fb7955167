/**
 * ratekeeper/node — rate limiting for plain `node:http` (and `node:https`, `http2` compat) request listeners.
 * @example
 * const limit = rateLimit({ rules: '10/s; 100/min' });
 * http.createServer(limit((req, res) => res.end('hello'))).listen(3000);
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Decision } from '../core/types.js';
import { RateLimitCore, LIST_FIELDS, PROBLEM_TYPE, hold, isPromise, mergeList, optionNames, type Facts, type RateLimitOptions, type Verdict } from './core.js';

export * from './core.js';
export { clientKeyDeriver, parseHop, forwardedFor, type KeyDeriver } from './keys.js';
export * from './headers.js';

/** NodeHandler — a request listener that also receives the decision (undefined when skipped or on error). */
export type NodeHandler<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse> =
  (req: Req, res: Res, decision?: Decision) => unknown;

/** NodeRateLimitOptions — {@link RateLimitOptions} plus the response to a refused request. */
export interface NodeRateLimitOptions extends RateLimitOptions<IncomingMessage> {
  /**
   * onLimited — answers a refused request instead of the default 429 problem+json. The rate-limit headers and
   * Retry-After are already set on `res`.
   */
  onLimited?: (req: IncomingMessage, res: ServerResponse, decision: Decision) => unknown;
}

const NODE_OPTIONS = optionNames('onLimited');

export const nodeFacts: Facts<IncomingMessage> = {
  peer: (req) => req.socket?.remoteAddress,
  header: (req, name) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  },
};

/** setHeaders — the verdict's headers on a node response, appending to list fields already set. */
export function setHeaders(res: ServerResponse, headers: [string, string][]): void {
  for (let i = 0; i < headers.length; i++) {
    const [name, value] = headers[i];
    if (LIST_FIELDS.has(name.toLowerCase())) res.setHeader(name, mergeList(res.getHeader(name), value));
    else res.setHeader(name, value);
  }
}

/**
 * settleOn — calls `core.settle` once `res` ends: with its status when the response was complete ('finish'), with
 * undefined when the connection closed first. Only for verdicts the core may refund (counting by outcome).
 */
export function settleOn<Req>(core: RateLimitCore<Req>, v: Verdict, req: Req, res: ServerResponse): void {
  if (!core.refundable(v)) return;
  let settled = false;
  res.once('finish', () => {
    if (settled) return;
    settled = true;
    core.settle(v, req, res.statusCode);
  });
  res.once('close', () => {
    if (settled) return;
    settled = true;
    core.settle(v, req, res.writableFinished ? res.statusCode : undefined);
  });
}

/** sendRefusal — the default answer to a refused request: status and problem+json body. */
export function sendRefusal(res: ServerResponse, v: Verdict): void {
  if (res.headersSent) return;
  res.statusCode = v.status;
  res.setHeader('Content-Type', PROBLEM_TYPE);
  res.end(v.body);
}

/**
 * rateLimit — a wrapper for request listeners: `rateLimit(options)(handler)` is a listener that decides each
 * request first and calls `handler(req, res, decision)` when it passes.
 */
export function rateLimit(options: NodeRateLimitOptions): <Req extends IncomingMessage, Res extends ServerResponse>(handler: NodeHandler<Req, Res>) => (req: Req, res: Res) => void {
  const core = new RateLimitCore<IncomingMessage>(options, nodeFacts, NODE_OPTIONS);
  const onLimited = options.onLimited;
  return function wrap<Req extends IncomingMessage, Res extends ServerResponse>(handler: NodeHandler<Req, Res>): (req: Req, res: Res) => void {
    const apply = (req: Req, res: Res, v: Verdict): void => {
      if (v.headers.length > 0) setHeaders(res, v.headers);
      if (v.kind === 'pass') {
        settleOn(core, v, req, res);
        if (v.delay > 0) {
          hold(v.delay).then(() => { if (!res.destroyed) run(handler, req, res, v.decision); });
        } else run(handler, req, res, v.decision);
      } else if (v.kind === 'limited' && onLimited !== undefined) {
        try {
          const r = onLimited(req, res, v.decision as Decision);
          if (isPromise(r)) r.then(undefined, (e) => fail(res, e));
        } catch (e) { fail(res, e); }
      } else sendRefusal(res, v);
    };
    return (req: Req, res: Res) => {
      const v = core.evaluate(req);
      if (isPromise(v)) v.then((x) => apply(req, res, x)).then(undefined, (e) => fail(res, e));
      else apply(req, res, v);
    };
  };
}

function run<Req extends IncomingMessage, Res extends ServerResponse>(handler: NodeHandler<Req, Res>, req: Req, res: Res, d: Decision | undefined): void {
  try {
    const r = handler(req, res, d);
    if (isPromise(r)) r.then(undefined, (e) => fail(res, e));
  } catch (e) {
    fail(res, e);
  }
}

/**
 * fail — an exception from the user's handler (which may run after a hold, outside the listener's call): 500, as
 * node:http has no error handling to hand it to.
 */
function fail(res: ServerResponse, e: unknown): void {
  if (!res.headersSent) {
    res.statusCode = 500;
    res.end();
  } else res.destroy(e instanceof Error ? e : undefined);
}
