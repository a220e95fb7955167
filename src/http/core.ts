/**
 * The framework-neutral core of the HTTP middleware: from a request's facts to a verdict (pass, hold, refuse)
 * with its status, headers and body. It imports no framework; the adapters (node, express, fastify, hono) only
 * read facts off their request and apply the verdict to their response.
 */
import type { Decision, RuleOutcome } from '../core/types.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptions } from '../core/options.js';
import { parseDuration, type Duration } from '../core/duration.js';
import { limiter as makeLimiter, Limiter, type LimiterOptions } from '../limiter.js';
import { clientKeyDeriver, type ClientKeyOptions, type KeyDeriver } from './keys.js';
import { LimitFieldWriter, policyField, problem, seconds, sha256PartitionKey, violated, type PartitionKey, type QuotaUnit } from './headers.js';

export type { ClientKeyOptions } from './keys.js';
export type { QuotaUnit } from './headers.js';

/** Awaitable — a value, or a promise of it. */
export type Awaitable<T> = T | Promise<T>;

/**
 * RateLimitOptions — what every adapter takes. `Req` is the framework's request (Express `req`, Fastify
 * `request`, Hono `Context`, node:http `IncomingMessage`): the callbacks receive it as is.
 */
export interface RateLimitOptions<Req> extends ClientKeyOptions {
  /** limiter — the limiter to ask. Either this or `rules`. */
  limiter?: Limiter;
  /**
   * rules — the policy, when the middleware makes its own limiter (with `store`, `dryRun`, `clock`).
   * @example '10/s; 100/min'
   */
  rules?: LimiterOptions['rules'];
  /** store — for the limiter made from `rules`. @default memoryStore() */
  store?: LimiterOptions['store'];
  /** dryRun — for the limiter made from `rules`: measure and send the headers, never refuse. @default false */
  dryRun?: boolean;
  /**
   * clock — ms. Used by the limiter made from `rules` and for the legacy X-RateLimit-Reset time; when given, every
   * check also passes its time explicitly, so it overrides a store's own clock (Redis TIME) too.
   * @default Date (and the store's own clock, if it has one)
   */
  clock?: LimiterOptions['clock'];
  /**
   * key — the client's key (a user id, an API key…). Without it: the client IP, see {@link ClientKeyOptions}.
   * @example (req) => req.get('x-api-key') ?? req.ip
   */
  key?: (req: Req) => Awaitable<string>;
  /** skip — requests for which it returns true are not counted and get no rate-limit headers. */
  skip?: (req: Req) => Awaitable<boolean>;
  /**
   * cost — what a request spends: a number, a function of the request, or `'content-length'` (the request's
   * body size in bytes, 0 when it has none: the leaky bucket's "bytes" case).
   * @default 1
   */
  cost?: number | 'content-length' | ((req: Req) => Awaitable<number>);
  /** quotaUnit — the `qu` of RateLimit-Policy. @default 'content-bytes' with cost 'content-length', else 'requests' */
  quotaUnit?: QuotaUnit;
  /** headers — send the IETF `RateLimit-Policy` and `RateLimit` fields. @default true */
  headers?: boolean;
  /** legacyHeaders — also send `X-RateLimit-Limit`, `-Remaining` and `-Reset` (epoch seconds), of the binding rule. @default false */
  legacyHeaders?: boolean;
  /**
   * partitionKey — add `pk` to every item so that clients can tell partitions apart without the key being disclosed:
   * `true` for the first 12 bytes of the key's SHA-256 (needs `node:crypto`: Node >= 20.16, Bun, Deno), or your
   * own digest function (edge runtimes). @default false
   */
  partitionKey?: boolean | PartitionKey;
  /**
   * shaping — hold requests that a leakyBucket rule admits with a `delay` for that long, then serve them in
   * order (nginx `limit_req` without `nodelay`); a request that would wait longer than `maxDelay` is refused
   * (429) without being charged. Without it, `delay` is ignored and admitted requests are served at once.
   * @example { maxDelay: '2s' }
   */
  shaping?: { maxDelay: Duration };
  /**
   * onLimiterError — what a request gets when the limiter (or `key`/`skip`/`cost`) throws or rejects — a store
   * down with no fallback, a bad key: `'reject'` answers 503 (fail closed), `'pass'` serves it without headers
   * (fail open). The server never crashes either way. A store's own failure policy comes first: a decision it
   * returns (`reason: 'store-unavailable'`) is applied as it says (503 when not allowed).
   * @default 'reject'
   */
  onLimiterError?: 'reject' | 'pass';
  /** onError — told about every such error (to log it); its own errors are ignored. */
  onError?: (error: unknown, req: Req) => void;
  /**
   * skipFailedRequests — count only the requests that succeed: a request is charged when it is decided, and its
   * charge is given back (`limiter.refund`) once its response says it failed (see `requestWasSuccessful`; a
   * connection closed before the response was complete is a failure). express-rate-limit's option of the same name.
   * @default false
   */
  skipFailedRequests?: boolean;
  /**
   * skipSuccessfulRequests — count only the requests that fail: the brute-force limit of a login form, which a
   * user who types the password right never runs into. Charged at the decision, given back once the response
   * succeeded. @default false
   */
  skipSuccessfulRequests?: boolean;
  /**
   * requestWasSuccessful — whether a response counts as a success, from the request and the response's status.
   * Used with skipFailedRequests / skipSuccessfulRequests.
   * @default (req, status) => status < 400
   */
  requestWasSuccessful?: (req: Req, status: number) => Awaitable<boolean>;
}

/**
 * RATE_LIMIT_OPTIONS — the names of {@link RateLimitOptions} (with {@link ClientKeyOptions}'): an adapter adds its
 * own (`onLimited`…) and every other name is refused, with the closest one suggested (`trustproxy` would otherwise
 * be ignored, and every client behind the proxy would share one key).
 */
export const RATE_LIMIT_OPTIONS: ReadonlySet<string> = new Set([
  'limiter', 'rules', 'store', 'dryRun', 'clock', 'key', 'skip', 'cost', 'quotaUnit', 'headers', 'legacyHeaders',
  'partitionKey', 'shaping', 'onLimiterError', 'onError', 'trustProxy', 'proxyHeader', 'ipv6Prefix', 'ipv4Prefix',
  'skipFailedRequests', 'skipSuccessfulRequests', 'requestWasSuccessful',
]);

/** optionNames — {@link RATE_LIMIT_OPTIONS} and an adapter's own names. */
export function optionNames(...own: string[]): ReadonlySet<string> {
  return new Set([...RATE_LIMIT_OPTIONS, ...own]);
}

const SHAPING_OPTIONS: ReadonlySet<string> = new Set(['maxDelay']);

/** Facts — how an adapter reads its request: the peer address and a header by lowercase name. */
export interface Facts<Req> {
  peer(req: Req): string | undefined;
  header(req: Req, name: string): string | undefined;
}

/**
 * Verdict — what the adapter does with a request.
 * `pass`: call the next handler, after `delay` ms (shaping), with `headers` set.
 * `limited`: answer `status` 429 (or the user's handler) with `headers` and the problem `body`.
 * `unavailable`: answer 503 with `body` (the store failed closed, or the limiter threw and `onLimiterError` is 'reject').
 * `invalid`: answer 400 with `body` (the request cannot be limited: no key, a malformed Content-Length…).
 */
export interface Verdict {
  kind: 'pass' | 'limited' | 'unavailable' | 'invalid';
  status: number;
  /** headers — [name, value] pairs; RateLimit and RateLimit-Policy are lists, to be appended to any already set. */
  headers: [string, string][];
  /** delay — ms to hold a passing request (shaping); 0 otherwise. */
  delay: number;
  /** decision — the limiter's decision (absent when skipped or on error). */
  decision?: Decision;
  key?: string;
  /** cost — what the request was charged (set only when the middleware counts by outcome: see RateLimitCore.settle). */
  cost?: number;
  /** body — the application/problem+json body of a refusal. */
  body?: string;
  error?: unknown;
}

/** PROBLEM_TYPE — the content type of refusal bodies. */
export const PROBLEM_TYPE = 'application/problem+json';

/** LIST_FIELDS — the fields that are structured lists: a second middleware appends its items to them. */
export const LIST_FIELDS = new Set(['ratelimit', 'ratelimit-policy']);

const SKIPPED: Verdict = Object.freeze({ kind: 'pass', status: 200, headers: [], delay: 0 }) as Verdict;

/** isPromise — a thenable (a callback may return any promise implementation). */
export function isPromise<T>(v: Awaitable<T>): v is Promise<T> {
  return typeof v === 'object' && v !== null && typeof (v as Promise<T>).then === 'function';
}

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
  /** maxDelay — the shaping bound in ms; undefined: no shaping. */
  private readonly maxDelay: number | undefined;
  /**
   * implied — every leakyBucket rule's burst already keeps its delay within the bound (a delay is at most
   * burst/rate): then no look is needed before the charge, and no race with another process either.
   */
  private readonly implied: boolean;
  /** leaky — indexes of the policy's leakyBucket rules (the ones that report a delay). */
  private readonly leaky: number[];
  private readonly failOpen: boolean;
  private readonly onError?: (error: unknown, req: Req) => void;
  private readonly now: () => number;
  /** timed — a clock was given: checks pass `now` (read once per request). */
  private readonly timed: boolean;
  private readonly rules: readonly RuleConfig[];
  /** chains — per key, the tail of the shaped checks in flight (asynchronous stores only); removed when idle. */
  private readonly chains = new Map<string, Promise<void>>();
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
    this.leaky = [];
    this.rules.forEach((r, i) => { if (r.algorithm === 'leakyBucket') this.leaky.push(i); });
    if (options.shaping !== undefined) {
      if (typeof options.shaping === 'object' && options.shaping !== null) checkOptions(options.shaping, SHAPING_OPTIONS, `${where}.shaping`);
      if (typeof options.shaping !== 'object' || options.shaping === null || options.shaping.maxDelay === undefined) {
        throw new RatekeeperError(`shaping must be { maxDelay: <duration> }: the bound is explicit, got ${show(options.shaping)}`);
      }
      if (this.leaky.length === 0) throw new RatekeeperError(`shaping needs a leakyBucket rule in the policy: only it reports a delay`);
      this.maxDelay = parseDuration(options.shaping.maxDelay, 'shaping.maxDelay');
    }
    const bound = this.maxDelay;
    this.implied = bound !== undefined && this.leaky.every((i) => (this.rules[i].burst * this.rules[i].per) / this.rules[i].limit <= bound);
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
    if (this.maxDelay !== undefined && !this.implied && cost > 0 && !this.limiter.policy.dryRun) {
      // Shaping: look first (cost 0 charges nothing), so that a request over the bound is refused uncharged.
      if (this.sync) {
        const over = this.overBound(this.limiter.checkSync(key, { cost: 0, now }), key);
        return over ?? this.verdict(this.shapedRemaining(this.limiter.checkSync(key, { cost, now }), cost), key);
      }
      return this.serial(key, () => this.limiter.check(key, { cost: 0, now }).then((peek) => {
        const over = this.overBound(peek, key);
        return over ?? this.limiter.check(key, { cost, now }).then((d) => this.verdict(this.shapedRemaining(d, cost), key));
      }));
    }
    if (this.sync) return this.verdict(this.limiter.checkSync(key, { cost, now }), key);
    return this.limiter.check(key, { cost, now }).then((d) => this.verdict(d, key));
  }

  /**
   * shapedRemaining — an admitted decision's `remaining` as shaping makes it true: a leakyBucket rule whose burst
   * allows more than the bound lets through only the requests whose delay stays within `maxDelay`. After this
   * request the rule's queue holds `level` = delay·rate + cost; the j-th further cost-1 request would wait
   * (level + j − 1)/rate (less, if some drains first), so j <= maxDelay·rate − level + 1 of them pass.
   */
  private shapedRemaining(d: Decision, cost: number): Decision {
    if (d.reason !== 'allowed') return d;
    const bound = this.maxDelay as number;
    let remaining = d.remaining;
    let rules: RuleOutcome[] | undefined;
    for (const i of this.leaky) {
      const r = d.rules[i];
      const c = this.rules[i];
      if (r === undefined || c === undefined) continue;
      const rate = c.limit / c.per;
      const level = (r.delay ?? 0) * rate + cost;
      const fits = Math.max(0, Math.floor(bound * rate - level + 1 + 1e-6));
      if (fits >= r.remaining) continue;
      rules ??= d.rules.slice();
      rules[i] = { ...r, remaining: fits };
      if (fits < remaining) remaining = fits;
    }
    return rules === undefined ? d : { ...d, remaining, rules };
  }

  /** overBound — the refusal of a request whose shaping delay (seen by a cost-0 look) would pass the bound. */
  private overBound(peek: Decision, key: string): Verdict | undefined {
    if (!peek.allowed || peek.reason === 'exempt' || !((peek.delay ?? 0) > (this.maxDelay as number))) return undefined;
    return this.verdict(this.boundDecision(peek), key);
  }

  /**
   * boundDecision — an admitted decision whose delay is over the bound, as the refusal it becomes: the leaky
   * rules whose queue is too long are the violated ones, with r=0 until the queue is back under the bound.
   */
  private boundDecision(d: Decision): Decision {
    const bound = this.maxDelay as number;
    const rules = d.rules.map((r, i) => {
      if (!this.leaky.includes(i) || !((r.delay ?? 0) > bound)) return r;
      return { ...r, allowed: false, remaining: 0, retryAfter: (r.delay as number) - bound };
    });
    return { ...d, allowed: false, reason: 'limited', remaining: 0, retryAfter: (d.delay as number) - bound, rules };
  }

  /**
   * serial — runs `fn` after every earlier shaped check of `key` in this process has finished, so that the look
   * and the charge of one request are not interleaved with another's (an asynchronous store answers in between).
   */
  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(key);
    const run = prev === undefined ? fn() : prev.then(fn, fn);
    const tail = run.then(noop, noop);
    this.chains.set(key, tail);
    tail.then(() => { if (this.chains.get(key) === tail) this.chains.delete(key); });
    return run;
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
      if (this.maxDelay !== undefined && d.reason !== 'dry-run' && d.delay !== undefined && d.delay > 0) {
        delay = d.delay;
        if (delay > this.maxDelay) {
          // another process sharing the store filled the queue between our look and the charge: the bound wins,
          // the request is refused (and stays charged).
          return this.verdict(this.boundDecision(d), key);
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

const noop = (): void => undefined;

const UNAVAILABLE = problem('about:blank', 503, 'Service Unavailable', { detail: 'The rate limiter could not decide this request.' });

function partitionKeyOf(v: unknown): PartitionKey | undefined {
  if (v === undefined || v === false) return undefined;
  if (typeof v === 'function') return v as PartitionKey;
  if (v !== true) throw new RatekeeperError(`partitionKey must be a boolean or a function (key) => Uint8Array, got ${show(v)}`);
  const digest = sha256PartitionKey();
  if (digest === undefined) throw new RatekeeperError(`partitionKey: true needs node:crypto, which this runtime lacks: pass a function (key) => Uint8Array instead`);
  return digest;
}

function bool(v: unknown, what: string, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new RatekeeperError(`${what} must be a boolean, got ${show(v)}`);
  return v;
}

/** contentLength — the Content-Length as a cost: its value, or 0 when absent. A malformed one throws. */
export function contentLength(value: string | undefined): number {
  if (value === undefined || value === '') return 0;
  if (!/^\d{1,15}$/.test(value.trim())) throw new RatekeeperError(`Content-Length ${show(value)} is not a length`, 'ERR_ARGUMENT');
  return Number(value.trim());
}

/** mergeList — a list field value appended to what an earlier middleware already set (RFC 9651 §3.1). */
export function mergeList(existing: unknown, value: string): string {
  if (existing === undefined || existing === null || existing === '') return value;
  return `${Array.isArray(existing) ? existing.join(', ') : String(existing)}, ${value}`;
}

/** hold — resolves after `ms` (shaping). Timers of equal or later deadlines fire in order, so held requests leave in order. */
export function hold(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
