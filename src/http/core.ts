/**
 * The framework-neutral core of the HTTP middleware: from a request's facts to a verdict (pass, hold, refuse)
 * with its status, headers and body. It imports no framework; the adapters (node, express, fastify, hono) only
 * read facts off their request and apply the verdict to their response. The options and the Verdict's shape live in
 * options.ts, the `shaping` bound in shaping.ts, the header fields' values in headers.ts; this file is the path from
 * a request to its verdict (skip → key → cost → decide → answer) and the refund of a request counted by outcome.
 */
import type { Decision } from '../core/types.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptions } from '../core/options.js';
import { limiter as makeLimiter, Limiter } from '../limiter.js';
import { clientKeyDeriver, type KeyDeriver } from './keys.js';
import { LimitFieldWriter, policyField, problem, seconds, violated, type PartitionKey, type QuotaUnit } from './headers.js';
import { RATE_LIMIT_OPTIONS, bool, contentLength, isPromise, partitionKeyOf, type Awaitable, type Facts, type RateLimitOptions, type Verdict } from './options.js';
import { Shaping } from './shaping.js';

export type { ClientKeyOptions } from './keys.js';
export type { QuotaUnit } from './headers.js';
export { RATE_LIMIT_OPTIONS, optionNames, isPromise, contentLength, type Awaitable, type Facts, type RateLimitOptions, type Verdict } from './options.js';

/** PROBLEM_TYPE — the content type of refusal bodies. */
export const PROBLEM_TYPE = 'application/problem+json';

/** LIST_FIELDS — the fields that are structured lists: a second middleware appends its items to them. */
export const LIST_FIELDS = new Set(['ratelimit', 'ratelimit-policy']);

const SKIPPED: Verdict = Object.freeze({ kind: 'pass', status: 200, headers: [], delay: 0 }) as Verdict;

/**
 * RateLimitCore — one middleware instance's policy, options and precomputed header values. `evaluate` returns
 * a verdict synchronously when everything it needs is synchronous (memory store, synchronous callbacks), so
 * adapters can call `next()` in the same tick.
 */
export class RateLimitCore<Req> {
  readonly limiter: Limiter;
  /** sync — the limiter's store answers synchronously (checkSync may be used). */
  private readonly sync: boolean;
  private readonly facts: Facts<Req>;
  private readonly derive: KeyDeriver;
  private readonly keyFn?: (req: Req) => Awaitable<string>;
  private readonly skip?: (req: Req) => Awaitable<boolean>;
  private readonly costFn?: (req: Req) => Awaitable<number>;
  private readonly costConst: number;
  private readonly headers: boolean;
  private readonly legacy: boolean;
  /** pk — the partition key digest, when `partitionKey` is on. */
  private readonly pk: PartitionKey | undefined;
  private readonly unit: QuotaUnit | undefined;
  /** policyValue — the RateLimit-Policy value (fixed for the limiter, unless `pk` makes it per client). */
  private readonly policyValue: string;
  private readonly limitWriter: LimitFieldWriter;
  /** shaping — the `shaping` bound and its checks in flight (shaping.ts); undefined: no shaping. */
  private readonly shaping: Shaping | undefined;
  private readonly failOpen: boolean;
  private readonly onError?: (error: unknown, req: Req) => void;
  private readonly now: () => number;
  /** timed — a clock was given: checks pass `now` (read once per request). */
  private readonly timed: boolean;
  private readonly rules: readonly RuleConfig[];
  /**
   * byOutcome — skipFailedRequests or skipSuccessfulRequests is on: an admitted request's charge may be given back
   * once its response is known (adapters then call {@link settle}); false costs the hot path nothing.
   */
  readonly byOutcome: boolean;
  /** refundSuccesses — skipSuccessfulRequests: a success's charge goes back; else a failure's does. */
  private readonly refundSuccesses: boolean;
  private readonly wasSuccessful: ((req: Req, status: number) => Awaitable<boolean>) | undefined;

  /**
   * @param known — the names `options` may have (the adapter's whole set: its own and RATE_LIMIT_OPTIONS).
   * @param where — how errors name the options object.
   */
  constructor(options: RateLimitOptions<Req>, facts: Facts<Req>, known: ReadonlySet<string> = RATE_LIMIT_OPTIONS, where = 'rateLimit') {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`${where} takes an options object with rules or a limiter, got ${show(options)}`);
    checkOptions(options, known, where);
    if (options.limiter !== undefined) {
      if (!(options.limiter instanceof Limiter)) throw new RatekeeperError(`limiter must be made by limiter(), got ${show(options.limiter)}`);
      if (options.rules !== undefined || options.store !== undefined || options.dryRun !== undefined) {
        throw new RatekeeperError(`give either limiter or rules (with store, dryRun), not both`);
      }
      this.limiter = options.limiter;
    } else {
      if (options.rules === undefined) throw new RatekeeperError(`rateLimit needs rules (e.g. '100/min') or a limiter`);
      this.limiter = makeLimiter({ rules: options.rules, store: options.store, dryRun: options.dryRun, clock: options.clock });
    }
    this.sync = this.limiter.sync;
    this.facts = facts;
    this.derive = clientKeyDeriver(options);
    for (const f of ['key', 'skip', 'onError'] as const) {
      if (options[f] !== undefined && typeof options[f] !== 'function') throw new RatekeeperError(`${f} must be a function, got ${show(options[f])}`);
    }
    this.keyFn = options.key;
    this.skip = options.skip;
    this.onError = options.onError;
    const cost = options.cost ?? 1;
    this.costConst = 1;
    if (typeof cost === 'function') this.costFn = cost;
    else if (cost === 'content-length') this.costFn = (req) => contentLength(this.facts.header(req, 'content-length'));
    else if (typeof cost === 'number' && cost >= 0 && Number.isFinite(cost)) this.costConst = cost;
    else throw new RatekeeperError(`cost must be a number >= 0, 'content-length' or a function, got ${show(cost)}`);
    const units: (QuotaUnit | undefined)[] = ['requests', 'content-bytes', 'concurrent-requests', undefined];
    if (!units.includes(options.quotaUnit)) throw new RatekeeperError(`quotaUnit must be 'requests', 'content-bytes' or 'concurrent-requests', got ${show(options.quotaUnit)}`);
    this.unit = options.quotaUnit ?? (cost === 'content-length' ? 'content-bytes' : undefined);
    this.headers = bool(options.headers, 'headers', true);
    this.legacy = bool(options.legacyHeaders, 'legacyHeaders', false);
    this.pk = partitionKeyOf(options.partitionKey);
    this.rules = this.limiter.policy.rules;
    this.policyValue = policyField(this.rules, this.unit);
    this.limitWriter = new LimitFieldWriter(this.rules);
    this.shaping = Shaping.of(options.shaping, this.rules, where);
    const mode = options.onLimiterError ?? 'reject';
    if (mode !== 'reject' && mode !== 'pass') throw new RatekeeperError(`onLimiterError must be 'reject' or 'pass', got ${show(mode)}`);
    this.failOpen = mode === 'pass';
    const skipFailed = bool(options.skipFailedRequests, 'skipFailedRequests', false);
    const skipSuccessful = bool(options.skipSuccessfulRequests, 'skipSuccessfulRequests', false);
    if (skipFailed && skipSuccessful) throw new RatekeeperError(`give skipFailedRequests or skipSuccessfulRequests, not both: with both no request would count`);
    if (options.requestWasSuccessful !== undefined) {
      if (typeof options.requestWasSuccessful !== 'function') throw new RatekeeperError(`requestWasSuccessful must be a function (req, status) => boolean, got ${show(options.requestWasSuccessful)}`);
      if (!skipFailed && !skipSuccessful) throw new RatekeeperError(`requestWasSuccessful is used only with skipFailedRequests or skipSuccessfulRequests: give one of them`);
    }
    this.byOutcome = skipFailed || skipSuccessful;
    this.refundSuccesses = skipSuccessful;
    this.wasSuccessful = options.requestWasSuccessful;
    const clock = options.clock;
    this.timed = clock !== undefined;
    this.now = clock ? () => clock.now() : Date.now;
  }

  /** evaluate — the verdict for one request. Never throws or rejects: errors become verdicts (onLimiterError). */
  evaluate(req: Req): Awaitable<Verdict> {
    try {
      if (this.skip !== undefined) {
        const s = this.skip(req);
        if (isPromise(s)) return Promise.resolve(s).then((v) => (v ? SKIPPED : this.keyed(req))).then(undefined, (e) => this.failure(e, req));
        if (s) return SKIPPED;
      }
      const v = this.keyed(req);
      return isPromise(v) ? Promise.resolve(v).then(undefined, (e) => this.failure(e, req)) : v;
    } catch (e) {
      return this.failure(e, req);
    }
  }

  private keyed(req: Req): Awaitable<Verdict> {
    let key: Awaitable<string> | undefined;
    if (this.keyFn !== undefined) key = this.keyFn(req);
    else {
      key = this.derive(this.facts.peer(req), (name) => this.facts.header(req, name));
      // the runtime gives no peer address (an edge worker): a deployment problem, not the client's, so it follows
      // onLimiterError (503 or pass) rather than being answered 400
      if (key === undefined) throw new RatekeeperError(`no client address to key the request by (pass a key function on this runtime)`, 'ERR_CONFIG');
    }
    if (isPromise(key)) return Promise.resolve(key).then((k) => this.costed(req, k));
    return this.costed(req, key);
  }

  private costed(req: Req, key: string): Awaitable<Verdict> {
    if (this.costFn === undefined) return this.charged(key, this.costConst);
    const c = this.costFn(req);
    return isPromise(c) ? Promise.resolve(c).then((v) => this.charged(key, v)) : this.charged(key, c);
  }

  /** charged — {@link decide}, with the cost written on the verdict when the middleware counts by outcome. */
  private charged(key: string, cost: number): Awaitable<Verdict> {
    const v = this.decide(key, cost);
    if (!this.byOutcome) return v;
    if (isPromise(v)) return v.then((x) => { x.cost = cost; return x; });
    v.cost = cost;
    return v;
  }

  /**
   * refundable — a verdict whose charge {@link settle} may give back: a request that passed and was charged
   * (reason 'allowed'; exempt, blocked, refused and dry-run refusals charged nothing to give back).
   */
  refundable(v: Verdict): boolean {
    return this.byOutcome && v.kind === 'pass' && v.decision?.reason === 'allowed' && v.key !== undefined && (v.cost ?? 0) > 0;
  }

  /**
   * settle — how a passed request ended: its response's `status`, or undefined when the connection closed before
   * the response was complete (a failure, as express-rate-limit counts it). Gives the request's charge back
   * (`limiter.refund`) when that outcome is not counted: a failure under skipFailedRequests, a success under
   * skipSuccessfulRequests. The adapters call it once per refundable verdict. Never throws; errors go to onError.
   */
  settle(v: Verdict, req: Req, status: number | undefined): void {
    if (!this.refundable(v)) return;
    const give = (success: boolean): void => {
      if (success !== this.refundSuccesses) return;
      const now = this.timed ? this.now() : undefined;
      this.limiter.refund(v.key as string, { cost: v.cost as number, now }).then(undefined, (e: unknown) => this.report(e, req));
    };
    try {
      if (status === undefined) return give(false);
      if (this.wasSuccessful === undefined) return give(status < 400);
      const ok = this.wasSuccessful(req, status);
      if (isPromise(ok)) Promise.resolve(ok).then((x) => give(x === true), (e: unknown) => this.report(e, req));
      else give(ok === true);
    } catch (e) {
      this.report(e, req);
    }
  }

  /** report — tells onError (if any) about an error after the response: nothing else can be done with it. */
  private report(error: unknown, req: Req): void {
    if (this.onError === undefined) return;
    try { this.onError(error, req); } catch { /* a logger's failure is ignored */ }
  }

  private decide(key: string, cost: number): Awaitable<Verdict> {
    const now = this.timed ? this.now() : undefined;
    const sh = this.shaping;
    if (sh !== undefined && !sh.implied && cost > 0 && !this.limiter.policy.dryRun) {
      // Shaping: look first (cost 0 charges nothing), so that a request over the bound is refused uncharged.
      if (this.sync) {
        const over = sh.over(this.limiter.checkSync(key, { cost: 0, now }));
        return over !== undefined ? this.verdict(over, key) : this.verdict(sh.remaining(this.limiter.checkSync(key, { cost, now }), cost), key);
      }
      return sh.serial(key, () => this.limiter.check(key, { cost: 0, now }).then((peek) => {
        const over = sh.over(peek);
        return over !== undefined ? this.verdict(over, key) : this.limiter.check(key, { cost, now }).then((d) => this.verdict(sh.remaining(d, cost), key));
      }));
    }
    if (this.sync) return this.verdict(this.limiter.checkSync(key, { cost, now }), key);
    return this.limiter.check(key, { cost, now }).then((d) => this.verdict(d, key));
  }

  /** verdict — a decision as status, headers and body. */
  verdict(d: Decision, key: string): Verdict {
    if (d.reason === 'exempt') return { kind: 'pass', status: 200, headers: [], delay: 0, decision: d, key };
    const headers: [string, string][] = [];
    // a store that could not decide knows no quota: no RateLimit fields rather than made-up zeros
    const known = d.reason !== 'store-unavailable';
    if (this.headers && known) {
      const pk = this.pk !== undefined ? this.pk(key) : undefined;
      headers.push(['RateLimit-Policy', pk ? policyField(this.rules, this.unit, pk) : this.policyValue]);
      headers.push(['RateLimit', this.limitWriter.write(d, pk)]);
    }
    if (this.legacy && known) {
      headers.push(['X-RateLimit-Limit', String(Math.floor(d.limit))]);
      headers.push(['X-RateLimit-Remaining', String(Math.max(0, Math.floor(d.remaining)))]);
      const reset = d.resetAfter < Infinity ? Math.ceil((this.now() + d.resetAfter) / 1000) : undefined;
      if (reset !== undefined) headers.push(['X-RateLimit-Reset', String(reset)]);
    }
    if (d.allowed) {
      let delay = 0;
      const sh = this.shaping;
      if (sh !== undefined && d.reason !== 'dry-run' && d.delay !== undefined && d.delay > 0) {
        delay = d.delay;
        if (delay > sh.maxDelay) {
          // another process sharing the store filled the queue between our look and the charge: the bound wins,
          // the request is refused (and stays charged).
          return this.verdict(sh.refusal(d), key);
        }
      }
      return { kind: 'pass', status: 200, headers, delay, decision: d, key };
    }
    const retry = seconds(d.retryAfter);
    if (retry !== undefined) headers.push(['Retry-After', String(retry)]);
    if (d.reason === 'store-unavailable') {
      return { kind: 'unavailable', status: 503, headers, delay: 0, decision: d, key, body: UNAVAILABLE };
    }
    const body = d.reason === 'blocked'
      ? problem('abnormal-usage-detected', 429, 'Request not satisfied: the client is blocked', { 'violated-policies': [] })
      : problem('quota-exceeded', 429, 'Request cannot be satisfied as assigned quota has been exceeded', {
        'violated-policies': violated(d),
        ...(retry !== undefined ? { detail: `Retry in ${retry} s.` } : {}),
      });
    return { kind: 'limited', status: 429, headers, delay: 0, decision: d, key, body };
  }

  private failure(error: unknown, req: Req): Verdict {
    if (this.onError !== undefined) {
      try { this.onError(error, req); } catch { /* a logger's failure must not take the request down */ }
    }
    if (error instanceof RatekeeperError && error.code === 'ERR_ARGUMENT') {
      // the request itself cannot be limited (no key, a malformed Content-Length, a bad cost): the client's
      // problem, answered 400 with the reason, whatever onLimiterError says about the limiter failing
      const detail = `The request cannot be rate limited: ${error.message.replace(/^ratekeeper: /, '')}.`;
      return { kind: 'invalid', status: 400, headers: [], delay: 0, error, body: problem('about:blank', 400, 'Bad Request', { detail }) };
    }
    if (this.failOpen) return { kind: 'pass', status: 200, headers: [], delay: 0, error };
    return { kind: 'unavailable', status: 503, headers: [], delay: 0, error, body: UNAVAILABLE };
  }
}

const UNAVAILABLE = problem('about:blank', 503, 'Service Unavailable', { detail: 'The rate limiter could not decide this request.' });

/** mergeList — a list field value appended to what an earlier middleware already set (RFC 9651 §3.1). */
export function mergeList(existing: unknown, value: string): string {
  if (existing === undefined || existing === null || existing === '') return value;
  return `${Array.isArray(existing) ? existing.join(', ') : String(existing)}, ${value}`;
}

/** hold — resolves after `ms` (shaping). Timers of equal or later deadlines fire in order, so held requests leave in order. */
export function hold(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
