import type { Clock, Decision, Override } from './core/types.js';
import type { RuleConfig } from './core/algorithms/common.js';
import { Policy } from './core/policy.js';
import { parseRules, MAX_AMOUNT } from './core/rules.js';
import { parseDuration, MAX_TIME, type Duration } from './core/duration.js';
import { anchoredClock } from './core/clock.js';
import { RatekeeperError, show } from './core/errors.js';
import { checkOptions, checkOptionsObject } from './core/options.js';
import { MemoryStore } from './stores/memory.js';
import type { BoundStore, Store } from './stores/types.js';
import { DenialCache, type DenialCacheOptions } from './denialCache.js';
import { Observer, type ObserveOptions, type Stats } from './observe/observer.js';
import type { HeavyHitter } from './observe/heavyHitters.js';
import { Sharing } from './observe/sharing.js';
import type { OverrideEntry } from './stores/types.js';

/** LimiterOptions — a limiter's policy, store and clock. */
export interface LimiterOptions {
  /**
   * rules — the policy: rules decided all-or-nothing, as rule values or one string for {@link parseRules}.
   * @example [rules.earrrl({ limit: 30, per: '1m', halfLife: '10s' }), rules.slidingLog({ limit: 800, per: '1d' })]
   * @example '1/s; 20/min; 800/day'
   */
  rules: readonly RuleConfig[] | string;
  /** store — where state lives. @default memoryStore() */
  store?: Store;
  /** dryRun — measure and report, change state as if enforced, but always allow. @default false */
  dryRun?: boolean;
  /**
   * clock — ms since the epoch; read once per call unless the call passes `now`. With a `monotonic()` source the
   * wall clock is read once, as the anchor, and the time advances with `monotonic()` (immune to wall-clock steps);
   * without one a step back is clamped. @default { now: Date.now, monotonic: () => performance.now() }
   */
  clock?: Clock;
  /**
   * denialCache — answer a key that was just refused in-process, without asking the store, until its retryAfter
   * has passed (saves a Redis round trip per request of an abuser). Active only where that is exact: every rule
   * leaky and not dry-run (otherwise `limiter.denialCache` is undefined); only `'limited'` refusals with a finite
   * retryAfter, for requests of the same cost. A reset, unblock or exempt of the key by this limiter drops
   * its entry; by another process, it is seen once the entry ends. @default false
   * @example limiter({ rules, store: redisStore({ client }), denialCache: { maxKeys: 10_000 } })
   */
  denialCache?: boolean | DenialCacheOptions;
  /**
   * observe — remember what this limiter decides, for `top()`, `stats()` and the admin view: the heaviest clients by
   * recent rate (a summary of fixed memory, whatever the number of clients), counters by outcome and rule over the
   * last hour, a live tail while watched. Off, the hot path pays one branch. On Redis, every process's summary is
   * shared there (`share`), so that `top()` answers for the whole fleet. @default false
   * @example limiter({ rules, observe: { capacity: 1000, halfLife: 10_000 } })
   */
  observe?: boolean | ObserveOptions;
  /**
   * succeeds — the limiter this one replaces (a reload that changed its rules), on the same store. When the rules are
   * compatible (the same number of rules, in order, each of the same algorithm and `per`: Policy.compatible) every
   * client's state, block and exemption carries over, judged by the new rules in the count sense (2 used of 2/min →
   * 98 left of 100/min; 50 used of 100/min → refused under 2/min); otherwise the clients start fresh. The old limiter
   * should not be used afterwards. On Redis the state is shared by key, see redisStore's `id`.
   */
  succeeds?: Limiter;
  /**
   * id — names this limiter's state in a shared store (Redis): limiters with the same id and compatible rules (the
   * same algorithms and periods, in order) read and write one state per client, whatever their limits — so a reload
   * or a rolling change of the rules carries every client over and never gives one two budgets. Without it the state
   * is named by the whole rules (limiters with other rules never share it). The service names each limit and policy.
   * @default undefined
   * @example limiter({ rules: '100/min', store: redisStore({ client }), id: 'api' })
   */
  id?: string;
  /**
   * namespace — where this limiter's clients live in a shared store, never seen in its API: a Redis store puts it in
   * front of every client key (`<prefix>{<namespace><key>}:<policy id>`), so that two limiters of the same rules on
   * one Redis never share a client's state; the memory store keeps one table per limiter and ignores it. Keys given to
   * and listed by the limiter (check, block, blocks(), top() …) are the client's, without it. @default ''
   * @example limiter({ rules, store: redisStore({ client }), namespace: 'api:' })
   */
  namespace?: string;
  /**
   * autoBlock — once the rules refuse a client (a request of cost > 0), block it for `for` from that refusal, as
   * rate-limiter-flexible's `blockDuration` does: the refusal's `retryAfter` is the block's end (or a rule's longer
   * wait), and every request until then is refused with `reason: 'blocked'`, charging no rule. The block is listed
   * with the operator's (`blocks()`, `inspect()`, the admin view) with `reason` (default `automatic: refused at
   * <rule name>`, e.g. `automatic: refused at 100/1m`); `unblock` lifts it. A block or exemption already in force is
   * never replaced, and on the memory store automatic blocks have their own budget: they never push out an
   * operator's (docs/memory.md). @default undefined (no automatic block)
   * @example limiter({ rules: '5/15m', autoBlock: { for: '1h' } }) // a login limit: the 6th attempt blocks for an hour
   */
  autoBlock?: { for: Duration; reason?: string };
}

/** TopOptions — which clients `top()` lists. */
export interface TopOptions {
  /** n — how many, at most (1 to the summary's capacity). @default 10 */
  n?: number;
  /** by — `'rate'` (recent rate of requests) or `'refused'` (recent rate of refused ones). @default 'rate' */
  by?: 'rate' | 'refused';
  /** now — ms, instead of the clock's. */
  now?: number;
  /** maxAge — ms: a listing of a shared store's blocks (to mark the blocked clients) this recent may be reused. @default 0 */
  maxAge?: number;
}

/** ListOptions — `blocks()` and `exemptions()`. */
export interface ListOptions {
  /** now — ms, instead of the store's clock. */
  now?: number;
  /**
   * maxAge — ms: a listing of a shared store (Redis) this recent may be reused instead of asking again (a dashboard
   * polling top, blocks and exemptions; the limiters of one Redis store share one listing, one read per master). A
   * change made through this limiter drops it. @default 0
   */
  maxAge?: number;
}

/** TopEntry — one of the heaviest clients, with its block or exemption (if any). */
export interface TopEntry extends HeavyHitter {
  blocked: boolean;
  exempt: boolean;
}

/** Inspection — everything the limiter knows of one key now. */
export interface Inspection {
  key: string;
  /** decision — what a request of cost 0 gets now: every rule's state, charging nothing. */
  decision: Decision;
  /** override — its block or exemption, with reason and end (`until` Infinity: until lifted). */
  override?: OverrideEntry;
  /** observed — its entry in the heavy-hitters summary of this process, when it is among the tracked clients. */
  observed?: HeavyHitter;
}

/** CheckOptions — one request. */
export interface CheckOptions {
  /** cost — what the request spends, a finite number >= 0; 0 looks without spending. @default 1 */
  cost?: number;
  /** now — the request's time in ms, instead of the clock's (tests, replays). */
  now?: number;
}

/** BlockOptions — a manual block. */
export interface BlockOptions {
  /** for — how long; without it the block lasts until `unblock`. */
  for?: Duration;
  /** reason — reported on every decision the block makes (`blockReason`). */
  reason?: string;
}

/** ExemptOptions — an allow-list entry. */
export interface ExemptOptions {
  /** for — how long; without it the exemption lasts until `unexempt`. */
  for?: Duration;
  /** reason — why: listed with the exemption (`exemptions()`, `inspect()`, the admin view). */
  reason?: string;
}

/** SucceedOptions — `Limiter.succeed`'s options. */
export interface SucceedOptions {
  /**
   * lazy — record the succession now (O(1)) and take the clients over at this limiter's first call or `settle()`,
   * converted as of now: a service swapping many limiters at once does not convert their clients in that step.
   * @default false
   */
  lazy?: boolean;
}

/** SUCCEED_OPTIONS — the names of succeed()'s options. */
const SUCCEED_OPTIONS: ReadonlySet<string> = new Set(['lazy']);

/** LIMITER_OPTIONS, CHECK_OPTIONS, PEEK_OPTIONS, BLOCK_OPTIONS, EXEMPT_OPTIONS — the names each options object may have. */
const LIMITER_OPTIONS: ReadonlySet<string> = new Set(['rules', 'store', 'dryRun', 'clock', 'denialCache', 'observe', 'succeeds', 'id', 'namespace', 'autoBlock']);
const AUTO_BLOCK_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);
const CHECK_OPTIONS: ReadonlySet<string> = new Set(['cost', 'now']);
const PEEK_OPTIONS: ReadonlySet<string> = new Set(['now']);
const BLOCK_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);
const EXEMPT_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);
/** TOP_OPTIONS, LIST_OPTIONS — the names of top()'s and blocks()/exemptions()'s options. */
const TOP_OPTIONS: ReadonlySet<string> = new Set(['n', 'by', 'now', 'maxAge']);
const LIST_OPTIONS: ReadonlySet<string> = new Set(['now', 'maxAge']);

/** MAX_KEY_LENGTH — the longest key accepted, in UTF-16 units: a key is an identifier, not a payload. */
export const MAX_KEY_LENGTH = 4096;

/**
 * Limiter — the public façade: validates calls, reads the clock once, and asks the store to decide.
 * `check` is the hot path; `checkSync` is its synchronous twin for synchronous stores (the memory store).
 */
export class Limiter {
  readonly policy: Policy;
  readonly store: Store;
  /** clocked — the limiter was given a clock: a succession converts at its time, not the store's. */
  private readonly clocked: boolean;
  /**
   * bound — the store bound to this limiter's policy (what checkAll talks to); replaced only by a succession. Reading
   * it first completes a takeover left pending by `succeed(old, { lazy: true })`, so nothing decides, blocks or lists
   * through this limiter before its clients are its own. @internal
   */
  get bound(): BoundStore {
    if (this.predecessor !== undefined) this.takeOver();
    return this.bound_;
  }
  /** bound_ — the store bound to this limiter's policy, as it is now (a pending takeover not done yet). */
  private bound_: BoundStore;
  /** predecessor — a pending lazy takeover (succeed with `lazy`): the limiter whose clients this one takes over at `predecessorAt`. */
  private predecessor: Limiter | undefined = undefined;
  /** predecessorAt — ms: the time of that takeover's conversion (when it was asked for); NaN: the store's own clock. */
  private predecessorAt = Number.NaN;
  private readonly clock: Clock;
  /** read — the clock as the façade reads it: anchored to a monotonic source when there is one, else clock.now(). */
  private readonly read: () => number;
  /** last — the latest time read; a clock that steps back is clamped to it. */
  private last = -Infinity;
  /** denialCache — the local cache of denials, when enabled and exact for this policy. */
  readonly denialCache: DenialCache | undefined;
  /** observer — what the limiter remembers of its decisions (`observe` option), or undefined. */
  readonly observer: Observer | undefined;
  /** sharing — the timer writing the observer's summary to a shared store (Redis), or undefined. Stopped by `close()`. */
  readonly sharing: Sharing | undefined;
  /** namespace — the store's prefix of this limiter's client keys (LimiterOptions.namespace); '' for none. */
  readonly namespace: string;

  constructor(options: LimiterOptions) {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`limiter takes an options object with rules, got ${show(options)}`);
    checkOptions(options, LIMITER_OPTIONS, 'limiter');
    const list = typeof options.rules === 'string' ? parseRules(options.rules) : options.rules;
    this.policy = new Policy({ rules: list, dryRun: options.dryRun, id: options.id, autoBlock: autoBlock_(options.autoBlock) });
    const clock = options.clock ?? { now: Date.now, monotonic: () => performance.now() };
    if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function') {
      throw new RatekeeperError(`clock must be an object with a now() method returning ms, got ${show(clock)}`);
    }
    if (clock.monotonic !== undefined && typeof clock.monotonic !== 'function') {
      throw new RatekeeperError(`clock.monotonic must be a function returning ms, got ${show(clock.monotonic)}`);
    }
    this.clock = clock;
    const monotonic = clock.monotonic;
    this.read = monotonic === undefined ? () => clock.now() : anchoredClock(() => clock.now(), () => monotonic.call(clock));
    const store = options.store ?? new MemoryStore();
    if (typeof store !== 'object' || store === null || typeof (store as Store).attach !== 'function') {
      throw new RatekeeperError(`store must be a ratekeeper store such as memoryStore() or redisStore({ client }), got ${show(store)}`);
    }
    this.store = store;
    const ns = options.namespace ?? '';
    if (typeof ns !== 'string' || ns.length > MAX_KEY_LENGTH || /[\uD800-\uDBFF]$/.test(ns)) {
      throw new RatekeeperError(`limiter.namespace must be a string of at most ${MAX_KEY_LENGTH} characters not ending in half a surrogate pair, got ${show(ns)}`);
    }
    this.namespace = ns;
    this.clocked = options.clock !== undefined;
    this.bound_ = this.succession(options.succeeds, this.clocked) ?? store.attach(this.policy, ns);
    const dc = options.denialCache;
    if (dc !== undefined && dc !== false) {
      const cache = new DenialCache(dc === true ? {} : dc); // its options are checked even where it is not used
      if (DenialCache.eligible(this.policy)) this.denialCache = cache;
    }
    const ob = options.observe;
    if (ob !== undefined && ob !== false) {
      this.observer = new Observer(this.policy.rules.map((r) => r.name), ob === true ? {} : ob);
      const every = this.observer.share;
      if (every !== false && typeof this.bound_.shareSummary === 'function') this.sharing = new Sharing(this.observer, this.bound_, every, () => this.tick());
    }
  }

  /**
   * succeed — takes over the clients of `old`, the limiter this one replaces on the same store (its rules changed):
   * when the rules are compatible (Policy.compatible) every client's state, block and exemption carries over, judged
   * by this limiter's rules, and true is returned; else nothing changes (false). Call it before this limiter decides
   * anything, and stop using `old` then: the service builds a new limiter while the old one serves, and calls this at
   * the swap, so that no state is converted while the old rules still decide. The `succeeds` option does the same at
   * construction.
   *
   * With `lazy`, the call only records the succession, in O(1) (a reload of 10 000 limits swaps them in one step
   * without converting a client): the takeover — the same, converted as of this call's time — happens at this
   * limiter's first call of any kind, or at `settle()`; `old` must not decide anything meanwhile. Returns whether
   * the rules are compatible (the store may still find nothing to carry: the clients then start fresh).
   */
  succeed(old: Limiter, options?: SucceedOptions): boolean {
    if (options !== undefined) callOptions(options, SUCCEED_OPTIONS, 'succeed');
    if (options?.lazy === true) {
      if (!this.carries(old)) return false;
      this.settle(); // a takeover still pending (a second succession before the first was done) first
      if (old.last > this.last) this.last = old.last;
      // a store with its own clock (Redis TIME) converts on that clock, unless this limiter was given a clock
      this.predecessorAt = this.bound_.ownClock && !this.clocked ? Number.NaN : this.tick();
      this.predecessor = old;
      return true;
    }
    this.settle();
    const b = this.succession(old, this.clocked);
    if (b === undefined) return false;
    this.bound_ = b;
    return true;
  }

  /** settle — completes a takeover left pending by `succeed(old, { lazy: true })`; nothing when there is none. */
  settle(): void {
    if (this.predecessor !== undefined) this.takeOver();
  }

  /** pending — whether a lazy takeover is still to be done (`settle` or this limiter's first call does it). */
  get pending(): boolean {
    return this.predecessor !== undefined;
  }

  /** takeOver — the pending lazy takeover, at the time it was asked for: the clients of the old limiter become ours. */
  private takeOver(): void {
    const old = this.predecessor!;
    const at = this.predecessorAt;
    this.predecessor = undefined;
    // old.bound: an old limiter whose own takeover is still pending completes it first (two reloads in a row)
    const b = this.store.succeed!(old.policy, this.policy, old.bound.ownClock && !this.clocked ? undefined : at, this.namespace);
    if (b !== undefined) this.bound_ = b;
  }

  /**
   * carries — whether this limiter can take over the clients of `old` (succeed): the same store, one that can carry
   * state, and compatible rules. The answer for the latest `old` found compatible is remembered, so that a service
   * asks while it builds its limiters and the succession itself, at the swap, costs no look at the rules.
   */
  carries(old: Limiter): boolean {
    if (old === this.compatibleWith) return true;
    if (!(old instanceof Limiter)) throw new RatekeeperError(`succeeds must be the limiter this one replaces, got ${show(old)}`);
    const yes = old.store === this.store && typeof this.store.succeed === 'function' && this.policy.compatible(old.policy);
    if (yes) this.compatibleWith = old;
    return yes;
  }

  /** compatibleWith — the latest limiter `carries` found this one can take over (rules never change: the answer holds). */
  private compatibleWith: Limiter | undefined;

  /**
   * succession — the store bound to this policy with the clients of `old` carried over (Store.succeed), when `old`
   * is a limiter on the same store with compatible rules; else undefined. The clock carries on from the old one's.
   */
  private succession(old: Limiter | undefined, clocked: boolean): BoundStore | undefined {
    if (old === undefined || !this.carries(old)) return undefined;
    if (old.last > this.last) this.last = old.last;
    // a store with its own clock (Redis TIME) converts on that clock, unless this limiter was given a clock
    return this.store.succeed!(old.policy, this.policy, old.bound.ownClock && !clocked ? undefined : this.tick(), this.namespace);
  }

  /** sync — whether the store answers synchronously, so that `checkSync` may be used (the memory store). */
  get sync(): boolean {
    return this.bound.sync;
  }

  /** check — decides one request of `key` and charges it when admitted. Rejects only on misuse (bad key, cost or now). */
  check(key: string, options?: CheckOptions): Promise<Decision> {
    try {
      const cost = cost_(options, 'check');
      const k = key_(key);
      const now = this.time(options);
      const cache = this.denialCache;
      const obs = this.observer;
      if (cache !== undefined) {
        const p = this.cached(cache, k, cost, now, now ?? this.tick());
        return obs === undefined ? p : this.observed(obs, p, k, cost, now);
      }
      const d = this.bound.evaluate(k, cost, now);
      if (this.bound.sync) {
        if (obs !== undefined) obs.record(k, cost, d as Decision, now as number);
        return Promise.resolve(d as Decision);
      }
      return obs === undefined ? (d as Promise<Decision>) : this.observed(obs, d as Promise<Decision>, k, cost, now);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** cached — check through the denial cache: a hit answers locally; a refusal from the store is remembered. */
  private async cached(cache: DenialCache, k: string, cost: number, now: number | undefined, local: number): Promise<Decision> {
    const hit = cache.get(k, cost, local);
    if (hit !== undefined) return hit;
    const epoch = cache.epoch;
    const d = await this.bound.evaluate(k, cost, now);
    cache.put(k, cost, local, d, epoch);
    return d;
  }

  /** observed — an asynchronous decision, recorded by the observer when it arrives (at the call's time). */
  private observed(obs: Observer, p: Promise<Decision>, k: string, cost: number, now: number | undefined): Promise<Decision> {
    const t = now ?? this.tick();
    return p.then((d) => {
      obs.record(k, cost, d, t);
      return d;
    });
  }

  /** checkSync — `check` without the promise, for synchronous stores. Throws on misuse or an asynchronous store. */
  checkSync(key: string, options?: CheckOptions): Decision {
    if (!this.bound.sync) throw new RatekeeperError(`checkSync needs a synchronous store such as memoryStore(); use check() with this one`, 'ERR_ARGUMENT');
    const cost = cost_(options, 'checkSync');
    const k = key_(key);
    const now = this.time(options) as number;
    const d = this.bound.evaluate(k, cost, now) as Decision;
    if (this.observer !== undefined) this.observer.record(k, cost, d, now);
    return d;
  }

  /** peek — the decision a request of `key` would get, charging nothing (a check of cost 0). */
  peek(key: string, options?: { now?: number }): Promise<Decision> {
    if (options !== undefined) {
      try {
        callOptions(options, PEEK_OPTIONS, 'peek');
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return this.check(key, { now: options?.now, cost: 0 });
  }

  /**
   * refund — gives back `cost` units that `key` was charged, as if that much of its latest admitted charges had not
   * happened (per algorithm: docs/algorithms.md, "Refunds"): for a request that was admitted but then not served.
   * Never leaves the client better off than a fresh one; an unknown key has nothing to give back. Drops the key's
   * denial-cache entry. Resolves to what a look of cost 0 sees afterwards. Rejects on misuse, and when the store
   * cannot be reached (Redis) or cannot refund.
   */
  async refund(key: string, options?: CheckOptions): Promise<Decision> {
    const k = key_(key);
    const cost = cost_(options, 'refund');
    const now = this.time(options);
    const bound = this.bound;
    if (bound.refund === undefined) throw new RatekeeperError(`refund needs a store that can give back a charge; this one has no refund()`, 'ERR_ARGUMENT');
    this.denialCache?.invalidate(k);
    const d = await bound.refund(k, cost, now, false);
    this.denialCache?.invalidate(k);
    return d;
  }

  /** reset — forgets `key`'s rule state; blocks and exemptions stay. */
  async reset(key: string): Promise<void> {
    const k = key_(key);
    this.denialCache?.invalidate(k);
    await this.bound.reset(k);
    this.denialCache?.invalidate(k);
  }

  /** block — refuses `key` (for a while, or until `unblock`), charging no rule. The later of block/exempt wins. */
  async block(key: string, options: BlockOptions = {}): Promise<void> {
    callOptions(options, BLOCK_OPTIONS, 'block');
    const k = key_(key);
    const ms = options.for === undefined ? Infinity : parseDuration(options.for, 'block.for');
    if (options.reason !== undefined && typeof options.reason !== 'string') {
      throw new RatekeeperError(`block.reason must be a string, got ${show(options.reason)}`, 'ERR_ARGUMENT');
    }
    this.denialCache?.invalidate(k);
    this.listing = undefined;
    await this.bound.setOverride(k, { kind: 'block', for: ms, reason: options.reason }, this.overrideTime());
    this.denialCache?.invalidate(k);
    this.listing = undefined;
  }

  /** unblock — lifts `key`'s block, if it has one. */
  async unblock(key: string): Promise<void> {
    const k = key_(key);
    this.denialCache?.invalidate(k);
    this.listing = undefined;
    await this.bound.clearOverride(k, 'block');
    this.denialCache?.invalidate(k);
    this.listing = undefined;
  }

  /** exempt — admits `key` without charging any rule (for a while, or until `unexempt`). The later of block/exempt wins. */
  async exempt(key: string, options: ExemptOptions = {}): Promise<void> {
    callOptions(options, EXEMPT_OPTIONS, 'exempt');
    const k = key_(key);
    const ms = options.for === undefined ? Infinity : parseDuration(options.for, 'exempt.for');
    if (options.reason !== undefined && typeof options.reason !== 'string') {
      throw new RatekeeperError(`exempt.reason must be a string, got ${show(options.reason)}`, 'ERR_ARGUMENT');
    }
    this.denialCache?.invalidate(k);
    this.listing = undefined;
    await this.bound.setOverride(k, { kind: 'exempt', for: ms, reason: options.reason }, this.overrideTime());
    this.denialCache?.invalidate(k);
    this.listing = undefined;
  }

  /** unexempt — lifts `key`'s exemption, if it has one. */
  async unexempt(key: string): Promise<void> {
    this.listing = undefined;
    await this.bound.clearOverride(key_(key), 'exempt' satisfies Override['kind']);
    this.listing = undefined;
  }

  /** close — stops sharing observations and closes the store (connections it owns). */
  async close(): Promise<void> {
    this.sharing?.stop();
    await this.store.close?.();
  }

  // Observation: the operators' view (see docs/admin.md).

  /**
   * top — the heaviest clients now by recent rate (or refused rate), from the observer's summary; on a shared store
   * (Redis), merged with every other process's latest summary. Each with whether it is blocked or exempt.
   * Needs `observe`.
   */
  async top(options: TopOptions = {}): Promise<TopEntry[]> {
    callOptions(options, TOP_OPTIONS, 'top');
    const obs = this.observing('top');
    const n = options.n ?? 10;
    if (!Number.isSafeInteger(n) || n < 1) throw new RatekeeperError(`top.n must be an integer >= 1, got ${show(options.n)}`, 'ERR_ARGUMENT');
    const by = options.by ?? 'rate';
    if (by !== 'rate' && by !== 'refused') throw new RatekeeperError(`top.by must be 'rate' or 'refused', got ${show(options.by)}`, 'ERR_ARGUMENT');
    const now = options.now ?? this.tick();
    const list = this.sharing !== undefined ? await this.sharing.merged(n, now, by) : obs.top(n, now, by);
    const overrides = new Map<string, OverrideEntry>();
    if (list.length > 0) for (const o of await this.overrides(options.now, options.maxAge)) overrides.set(o.key, o);
    return list.map((e) => {
      const kind = overrides.get(e.key)?.kind;
      return { ...e, blocked: kind === 'block', exempt: kind === 'exempt' };
    });
  }

  /** inspect — `key`'s state now: every rule's as a cost-0 decision (nothing charged), its block or exemption, its observed rate. */
  async inspect(key: string, options: { now?: number } = {}): Promise<Inspection> {
    callOptions(options, PEEK_OPTIONS, 'inspect');
    const k = key_(key);
    const now = this.time(options);
    const decision = await this.bound.evaluate(k, 0, now);
    const out: Inspection = { key: k, decision };
    const o = this.bound.override === undefined ? undefined : await this.bound.override(k, now);
    if (o !== undefined) out.override = o;
    const seen = this.observer?.hitters.get(k, options.now ?? this.tick());
    if (seen !== undefined) out.observed = seen;
    return out;
  }

  /** blocks — the blocks in force now, on every store (on Redis, from the index the scripts keep). */
  async blocks(options: ListOptions = {}): Promise<OverrideEntry[]> {
    callOptions(options, LIST_OPTIONS, 'blocks');
    return (await this.overrides(options.now, options.maxAge)).filter((o) => o.kind === 'block');
  }

  /** exemptions — the exemptions in force now. */
  async exemptions(options: ListOptions = {}): Promise<OverrideEntry[]> {
    callOptions(options, LIST_OPTIONS, 'exemptions');
    return (await this.overrides(options.now, options.maxAge)).filter((o) => o.kind === 'exempt');
  }

  /** stats — decisions by outcome and by refusing rule since the start, and per bucket from `from` (ms). Needs `observe`. */
  stats(options: { from?: number; now?: number } = {}): Stats {
    return this.observing('stats').stats(options.now ?? this.tick(), options.from);
  }

  /**
   * overrides — the store's blocks and exemptions in force. With `maxAge` (and no explicit `now`), a listing of a
   * shared store that recent is reused, so one that ended since may still be listed; a change made through this
   * limiter drops it.
   */
  private async overrides(now: number | undefined, maxAge = 0): Promise<OverrideEntry[]> {
    const bound = this.bound;
    if (bound.overrides === undefined) throw new RatekeeperError(`this store cannot list blocks and exemptions`, 'ERR_ARGUMENT');
    if (now !== undefined || bound.sync) return bound.overrides(now ?? (bound.ownClock ? undefined : this.tick()));
    const at = Date.now();
    const cached = this.listing;
    if (cached !== undefined && at - cached.at < maxAge && at >= cached.at) {
      return cached.list;
    }
    const list = Promise.resolve(bound.overrides(undefined, maxAge));
    const entry = { at, list };
    this.listing = entry;
    list.catch(() => {
      if (this.listing === entry) this.listing = undefined;
    });
    return list;
  }

  /** listing — the latest listing of a shared store's overrides and when it was asked for (local ms). */
  private listing: { at: number; list: Promise<OverrideEntry[]> } | undefined;

  private observing(what: string): Observer {
    if (this.observer === undefined) throw new RatekeeperError(`${what}() needs a limiter made with { observe: true }`, 'ERR_ARGUMENT');
    return this.observer;
  }

  /** time — the call's time: its explicit `now`, else the store's own clock, else ours (clamped to never step back). @internal */
  time(options: CheckOptions | undefined): number | undefined {
    const now = options?.now;
    if (now !== undefined) {
      if (typeof now !== 'number' || !Number.isFinite(now)) throw new RatekeeperError(`now must be a finite number of ms, got ${show(now)}`, 'ERR_ARGUMENT');
      if (!(now >= 0 && now <= MAX_TIME)) throw new RatekeeperError(`now must be from 0 to ${MAX_TIME} ms since the epoch, got ${show(now)}`, 'ERR_ARGUMENT');
      return now;
    }
    if (this.bound.ownClock) return undefined;
    return this.tick();
  }

  private overrideTime(): number | undefined {
    return this.bound.ownClock ? undefined : this.tick();
  }

  /** tick — the clock's time, never stepping back. @internal */
  tick(): number {
    const t = this.read();
    if (t > this.last) this.last = t;
    return this.last;
  }
}

/** autoBlock_ — LimiterOptions.autoBlock checked, its duration in ms (undefined: none). */
function autoBlock_(auto: LimiterOptions['autoBlock']): { for: number; reason?: string } | undefined {
  if (auto === undefined) return undefined;
  checkOptionsObject(auto, AUTO_BLOCK_OPTIONS, 'limiter.autoBlock');
  if (auto.for === undefined) throw new RatekeeperError(`limiter.autoBlock.for is required: how long a refused client stays blocked, like '15m'`);
  if (auto.reason !== undefined && typeof auto.reason !== 'string') throw new RatekeeperError(`limiter.autoBlock.reason must be a string, got ${show(auto.reason)}`);
  const out: { for: number; reason?: string } = { for: parseDuration(auto.for, 'limiter.autoBlock.for') };
  if (auto.reason !== undefined) out.reason = auto.reason;
  return out;
}

export function key_(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new RatekeeperError(
      typeof key === 'string'
        ? `key must be a non-empty string of at most ${MAX_KEY_LENGTH} characters, got one of ${key.length}`
        : `key must be a non-empty string, got ${show(key)}`,
      'ERR_ARGUMENT',
    );
  }
  return key;
}

/** callOptions — a call's options object: an object whose every name is in `known`, else an ERR_ARGUMENT naming it. */
function callOptions(options: unknown, known: ReadonlySet<string>, where: string): void {
  checkOptionsObject(options, known, where, 'ERR_ARGUMENT');
}

/**
 * cost_ — the cost of a check, and the check of its options: a misspelled name (`{ cots: 5 }`) is an error, not a
 * cost of 1. The hot path pays one `for…in` over the (one or two) names of the literal, compared by identity with
 * the two known ones; the full check and its message run only when a name is not one of them.
 */
export function cost_(options: CheckOptions | undefined, where = 'check'): number {
  if (options === undefined) return 1;
  if (typeof options !== 'object' || options === null) callOptions(options, CHECK_OPTIONS, where);
  for (const name in options) if (name !== 'cost' && name !== 'now') callOptions(options, CHECK_OPTIONS, where);
  if (options.cost === undefined) return 1;
  const c = options.cost;
  if (typeof c !== 'number' || !(c >= 0) || c === Infinity) {
    throw new RatekeeperError(`cost must be a finite number >= 0, got ${show(c)}`, 'ERR_ARGUMENT');
  }
  if (c > MAX_AMOUNT) throw new RatekeeperError(`cost must be at most ${MAX_AMOUNT}, got ${show(c)}`, 'ERR_ARGUMENT');
  return c;
}

/** limiter — makes a {@link Limiter}. Bad configuration throws here, naming the rule, field and value. */
export function limiter(options: LimiterOptions): Limiter {
  return new Limiter(options);
}
