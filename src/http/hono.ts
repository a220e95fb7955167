/**
 * ratekeeper/hono — Hono middleware on Web-standard Request/Response: Node (@hono/node-server), Bun, Deno and
 * edge runtimes. Imports nothing from Hono at run time.
 * @example
 * app.use('/api/*', rateLimit({ rules: '100/min', key: (c) => c.req.header('x-api-key') ?? 'anonymous' }));
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Decision } from '../core/types.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptions } from '../core/options.js';
import { RateLimitCore, LIST_FIELDS, PROBLEM_TYPE, hold, optionNames, type Facts, type RateLimitOptions } from './core.js';

export * from './core.js';
export * from './headers.js';
export { clientKeyDeriver, type KeyDeriver } from './keys.js';

/** HonoRateLimitOptions — {@link RateLimitOptions} plus Hono's own. */
export interface HonoRateLimitOptions extends RateLimitOptions<Context> {
  /**
   * peer — the peer address of a request. The default reads it where each runtime puts it: @hono/node-server's
   * `c.env.incoming.socket`, Bun's `c.env.requestIP()`, Deno's `c.env.remoteAddr` (when the server is started
   * with `Deno.serve(app.fetch)`, `(req, info) => app.fetch(req, info)`…). On runtimes without one (edge
   * workers), give `key` instead: without an address every request is a limiter error (see onLimiterError).
   */
  peer?: (c: Context) => string | undefined;
  /** onLimited — the response to a refused request instead of the default 429 problem+json; headers are already set on `c`. */
  onLimited?: (c: Context, decision: Decision) => Response | Promise<Response>;
}

const HONO_OPTIONS = optionNames('peer', 'onLimited');

/** defaultPeer — the peer address from the runtime's environment object, if it exposes one. */
export function defaultPeer(c: Context): string | undefined {
  const env = c.env as Record<string, unknown> | undefined;
  if (env === undefined || env === null || typeof env !== 'object') return undefined;
  const incoming = env.incoming as { socket?: { remoteAddress?: string } } | undefined; // @hono/node-server
  if (incoming?.socket?.remoteAddress !== undefined) return incoming.socket.remoteAddress;
  const requestIP = env.requestIP as ((r: Request) => { address?: string } | null) | undefined; // Bun.serve
  if (typeof requestIP === 'function') return requestIP.call(env, c.req.raw)?.address ?? undefined;
  const remote = env.remoteAddr as { hostname?: string } | undefined; // Deno.serve's ServeHandlerInfo
  return remote?.hostname;
}

declare module 'hono' {
  interface ContextVariableMap {
    /** rateLimit — ratekeeper's decision for this request (unset when skipped or on a limiter error). */
    rateLimit: Decision;
  }
}

/**
 * rateLimit — Hono middleware: decides the request, awaits `next()` (after the shaping delay, if any) and adds
 * the headers to the handler's response, or returns a 429/503 response. The decision is `c.get('rateLimit')`.
 */
export function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler {
  if (typeof options !== 'object' || options === null) throw new RatekeeperError(`rateLimit takes an options object with rules or a limiter, got ${show(options)}`);
  checkOptions(options, HONO_OPTIONS, 'rateLimit');
  const peer = options.peer ?? defaultPeer;
  const facts: Facts<Context> = { peer, header: (c, name) => c.req.header(name) };
  const { peer: _p, onLimited, ...rest } = options;
  const core = new RateLimitCore<Context>(rest, facts);
  return async (c, next) => {
    const v = await core.evaluate(c);
    if (v.decision !== undefined) c.set('rateLimit', v.decision);
    if (v.kind === 'pass') {
      if (v.delay > 0) await hold(v.delay);
      await next();
      // counting by outcome: the handler's status is known here (a thrown error is already Hono's 500 response)
      if (core.refundable(v)) core.settle(v, c, c.res.status);
      // after the handler: a handler may return a Response of its own, which headers set before would miss
      for (const [name, value] of v.headers) c.header(name, value, LIST_FIELDS.has(name.toLowerCase()) ? { append: true } : undefined);
      return;
    }
    // before the refusal handler (so c.json/c.body carry them), and again on whatever Response it returns
    for (const [name, value] of v.headers) c.header(name, value);
    let res: Response;
    if (v.kind === 'limited' && onLimited !== undefined) res = await onLimited(c, v.decision as Decision);
    else {
      c.header('Content-Type', PROBLEM_TYPE);
      res = c.body(v.body ?? '', v.status as 400 | 429 | 503);
    }
    c.res = res;
    for (const [name, value] of v.headers) if (!c.res.headers.has(name)) c.header(name, value);
    return c.res;
  };
}
