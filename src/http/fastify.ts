/**
 * ratekeeper/fastify — a Fastify plugin (4 and 5). Registered on an instance, it limits the routes declared
 * after it on that instance and its children (encapsulation), each route may override it or opt out through
 * its `config.rateLimit`. Imports nothing from Fastify at run time.
 * @example
 * await app.register(ratekeeperPlugin, { rules: '100/min' });
 * app.get('/search', { config: { rateLimit: { rules: '10/min' } } }, search);
 * app.get('/health', { config: { rateLimit: false } }, health);
 */
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest, RouteOptions, onRequestHookHandler } from 'fastify';
import type { Decision } from '../core/types.js';
import { RatekeeperError, show } from '../core/errors.js';
import { hintFor, unknownOption } from '../core/options.js';
import { RateLimitCore, LIST_FIELDS, PROBLEM_TYPE, isPromise, mergeList, optionNames, type Facts, type RateLimitOptions, type Verdict } from './core.js';
import { settleOn } from './node.js';

export * from './core.js';
export * from './headers.js';
export { clientKeyDeriver, type KeyDeriver } from './keys.js';

/** FastifyRateLimitOptions — {@link RateLimitOptions} plus the plugin's own. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** global — limit every route in scope; false: only the routes whose `config.rateLimit` is set. @default true */
  global?: boolean;
  /**
   * hook — where the decision is made: `'onRequest'` (before the body is read: the cheapest) or `'preHandler'`
   * (after parsing and validation, so `key` and `cost` may read `request.body` or an authenticated user).
   * @default 'onRequest'
   */
  hook?: 'onRequest' | 'preHandler';
  /** onLimited — answers a refused request instead of the default 429 problem+json (headers are already set). */
  onLimited?: (request: FastifyRequest, reply: FastifyReply, decision: Decision) => unknown;
}

/**
 * FastifyRouteRateLimitOptions — a route's `config.rateLimit`: overrides of the plugin's options. With `rules`
 * (on the plugin's store unless `store` is given) or `limiter` the route has its own limiter (its own counters);
 * without, it shares the plugin's limiter and overrides only what it names (`cost`, `key`, `skip`, `shaping`…).
 */
export type FastifyRouteRateLimitOptions = Omit<FastifyRateLimitOptions, 'global'>;

declare module 'fastify' {
  interface FastifyRequest {
    /** rateLimit — ratekeeper's decision for this request (null when skipped, not limited, or on a limiter error). */
    rateLimit: Decision | null;
  }
  interface FastifyContextConfig {
    /** rateLimit — this route's overrides of the ratekeeper plugin's options, or false to leave it unlimited. */
    rateLimit?: false | FastifyRouteRateLimitOptions;
  }
}

/**
 * PLUGIN_OPTIONS, ROUTE_OPTIONS — the names the plugin's options and a route's `config.rateLimit` may have. The
 * plugin's include Fastify's own register options (`prefix`, `logLevel`, `logSerializers`), which Fastify passes on.
 */
const PLUGIN_OPTIONS = optionNames('global', 'hook', 'onLimited', 'prefix', 'logLevel', 'logSerializers');
const ROUTE_OPTIONS = optionNames('hook', 'onLimited');

const facts: Facts<FastifyRequest> = {
  peer: (request) => request.raw.socket?.remoteAddress,
  header: (request, name) => {
    const v = request.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  },
};

type Done = (err?: Error) => void;

/** hookOf — the hook function of one core and its refusal handler. */
function hookOf(core: RateLimitCore<FastifyRequest>, onLimited: FastifyRateLimitOptions['onLimited']): (request: FastifyRequest, reply: FastifyReply, done: Done) => void {
  const apply = (request: FastifyRequest, reply: FastifyReply, done: Done, v: Verdict): void => {
    if (v.decision !== undefined) request.rateLimit = v.decision;
    const h = v.headers;
    try {
      for (let i = 0; i < h.length; i++) {
        const [name, value] = h[i];
        reply.header(name, LIST_FIELDS.has(name.toLowerCase()) ? mergeList(reply.getHeader(name), value) : value);
      }
    } catch (e) {
      done(e as Error); // e.g. headers already sent by an earlier hook: fastify's error handling answers
      return;
    }
    if (v.kind === 'pass') {
      settleOn(core, v, request, reply.raw);
      if (v.delay > 0) setTimeout(done, v.delay);
      else done();
      return;
    }
    if (v.kind === 'limited' && onLimited !== undefined) {
      try {
        const r = onLimited(request, reply, v.decision as Decision);
        if (isPromise(r)) r.then(undefined, (e) => reply.send(e));
      } catch (e) {
        reply.send(e);
      }
      return;
    }
    reply.code(v.status).type(PROBLEM_TYPE).send(v.body);
  };
  return (request, reply, done) => {
    const v = core.evaluate(request);
    if (isPromise(v)) v.then((x) => apply(request, reply, done, x));
    else apply(request, reply, done, v);
  };
}

function appendHook(route: RouteOptions, name: 'onRequest' | 'preHandler', fn: unknown): void {
  const existing = route[name] as unknown;
  if (existing === undefined || existing === null) (route as unknown as Record<string, unknown>)[name] = [fn];
  else if (Array.isArray(existing)) (route as unknown as Record<string, unknown>)[name] = [fn, ...existing];
  else (route as unknown as Record<string, unknown>)[name] = [fn, existing];
}

/**
 * ratekeeperPlugin — the plugin. It adds no global hook: an `onRoute` hook attaches the limiter's hook to each
 * route as it is declared, so route configs are read once, at startup, and unlimited routes cost nothing.
 */
const plugin: FastifyPluginCallback<FastifyRateLimitOptions> = (fastify: FastifyInstance, options, done) => {
  let base: RateLimitCore<FastifyRequest> | undefined;
  try {
    const { global: _g, hook: _h, onLimited: _o, ...coreOptions } = options as FastifyRateLimitOptions & { prefix?: unknown; logLevel?: unknown };
    delete (coreOptions as Record<string, unknown>).prefix;
    delete (coreOptions as Record<string, unknown>).logLevel;
    base = new RateLimitCore<FastifyRequest>(coreOptions, facts, PLUGIN_OPTIONS, 'ratekeeperPlugin');
  } catch (e) {
    done(e as Error);
    return;
  }
  const global = options.global ?? true;
  if (typeof global !== 'boolean') return done(new RatekeeperError(`global must be a boolean, got ${show(global)}`));
  const hookName = options.hook ?? 'onRequest';
  if (hookName !== 'onRequest' && hookName !== 'preHandler') return done(new RatekeeperError(`hook must be 'onRequest' or 'preHandler', got ${show(hookName)}`));
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
  const baseHook = hookOf(base, options.onLimited);
  // one core per route config object: fastify's automatic HEAD route shares its GET route's config, and counters
  const perRoute = new WeakMap<object, { hook: unknown; name: 'onRequest' | 'preHandler' }>();

  fastify.addHook('onRoute', (route) => {
    const cfg = (route.config as { rateLimit?: false | FastifyRouteRateLimitOptions } | undefined)?.rateLimit;
    if (cfg === false) return;
    if (cfg === undefined || cfg === null) {
      if (global) appendHook(route, hookName, baseHook);
      return;
    }
    if (typeof cfg !== 'object') throw new RatekeeperError(`config.rateLimit of ${route.method} ${route.url} must be an object or false, got ${show(cfg)}`);
    const bad = unknownOption(cfg, ROUTE_OPTIONS);
    if (bad !== undefined) {
      const value = (cfg as Record<string, unknown>)[bad];
      throw new RatekeeperError(`config.rateLimit.${bad} of ${route.method} ${route.url} is not an option of config.rateLimit${hintFor(bad, ROUTE_OPTIONS, 'config.rateLimit')}, got ${show(value)}`);
    }
    let entry = perRoute.get(cfg);
    if (entry === undefined) {
      // the plugin's options minus its policy, then the route's. A route without rules or limiter shares the
      // plugin's limiter; one with rules gets its own limiter on the plugin's store (and dry-run), unless it names its own.
      const { global: _g, hook: _h, onLimited: _o, limiter: _l, rules: _r, store: _s, dryRun: _d, ...inherited } = options;
      const { hook: h, onLimited: o, ...own } = cfg;
      const merged: RateLimitOptions<FastifyRequest> = { ...inherited, ...own };
      if (cfg.limiter === undefined) {
        if (cfg.rules === undefined) {
          if (cfg.store !== undefined || cfg.dryRun !== undefined) throw new RatekeeperError(`config.rateLimit of ${route.method} ${route.url}: store and dryRun go with rules`);
          merged.limiter = base.limiter;
        } else {
          merged.store = cfg.store ?? base.limiter.store;
          merged.dryRun = cfg.dryRun ?? base.limiter.policy.dryRun;
        }
      }
      delete (merged as Record<string, unknown>).prefix;
      delete (merged as Record<string, unknown>).logLevel;
      const name = h ?? hookName;
      if (name !== 'onRequest' && name !== 'preHandler') throw new RatekeeperError(`config.rateLimit.hook of ${route.url} must be 'onRequest' or 'preHandler', got ${show(name)}`);
      entry = { hook: hookOf(new RateLimitCore<FastifyRequest>(merged, facts, PLUGIN_OPTIONS, 'config.rateLimit'), o ?? options.onLimited), name };
      perRoute.set(cfg, entry);
    }
    appendHook(route, entry.name, entry.hook as onRequestHookHandler);
  });
  done();
};

const meta = plugin as unknown as Record<symbol, unknown>;
meta[Symbol.for('skip-override')] = true; // hooks and decorators reach the instance the plugin is registered on
meta[Symbol.for('fastify.display-name')] = 'ratekeeper';
meta[Symbol.for('plugin-meta')] = { name: 'ratekeeper', fastify: '>=4' };

export const ratekeeperPlugin = plugin;
export default plugin;
