/**
 * ratekeeper/express — rate-limiting middleware for Express 4 and 5. Imports nothing from Express at run time.
 * @example
 * app.use(rateLimit({ rules: '10/s; 100/min' }));
 * app.post('/upload', rateLimit({ rules: [rules.leakyBucket({ limit: 1e6, per: '1s' })], cost: 'content-length' }), upload);
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Decision } from '../core/types.js';
import { RateLimitCore, PROBLEM_TYPE, hold, isPromise, optionNames, type Facts, type RateLimitOptions, type Verdict } from './core.js';
import { setHeaders, settleOn } from './node.js';

export * from './core.js';
export * from './headers.js';
export { clientKeyDeriver, type KeyDeriver } from './keys.js';

declare global {
  namespace Express {
    interface Request {
      /** rateLimit — ratekeeper's decision for this request (absent when skipped or on a limiter error). */
      rateLimit?: Decision;
    }
  }
}

/** ExpressRateLimitOptions — {@link RateLimitOptions} plus the response to a refused request. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request> {
  /**
   * onLimited — answers a refused request instead of the default 429 problem+json; the rate-limit headers and
   * Retry-After are already set on `res`. It may also call `next(err)`.
   */
  onLimited?: (req: Request, res: Response, next: NextFunction, decision: Decision) => unknown;
}

const EXPRESS_OPTIONS = optionNames('onLimited');

const facts: Facts<Request> = {
  peer: (req) => req.socket?.remoteAddress,
  header: (req, name) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  },
};

/**
 * rateLimit — Express middleware: decides the request, sets the headers, and calls `next()` (after the shaping
 * delay, if any) or answers 429/503. The decision is on `req.rateLimit`.
 */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  const core = new RateLimitCore<Request>(options, facts, EXPRESS_OPTIONS);
  const onLimited = options.onLimited;
  const apply = (req: Request, res: Response, next: NextFunction, v: Verdict): void => {
    if (v.decision !== undefined) req.rateLimit = v.decision;
    if (v.headers.length > 0) setHeaders(res, v.headers);
    if (v.kind === 'pass') {
      settleOn(core, v, req, res);
      if (v.delay > 0) hold(v.delay).then(() => { if (!res.destroyed) next(); });
      else next();
    } else if (v.kind === 'limited' && onLimited !== undefined) {
      try {
        const r = onLimited(req, res, next, v.decision as Decision);
        if (isPromise(r)) r.then(undefined, next);
      } catch (e) { next(e); }
    } else if (!res.headersSent) {
      res.status(v.status).type(PROBLEM_TYPE).send(v.body);
    }
  };
  return (req, res, next) => {
    const v = core.evaluate(req);
    if (isPromise(v)) v.then((x) => apply(req, res, next, x)).then(undefined, next);
    else apply(req, res, next, v);
  };
}
