/**
 * limiter — the public façade: a Limiter validates a call, reads the clock once and asks its store to decide (the hot
 * path: check, checkSync, peek), and carries its clients over when it replaces another (succession). What operators
 * change (limiter/commands.ts), what they look at (limiter/observation.ts), the option types and argument checks
 * (limiter/options.ts) and the view checkAll has of a limiter (limiter/combinable.ts) live beside it; the methods
 * here that delegate to them are one line each.
 */
import type { Decision } from './core/types.js';
import { Policy } from './core/policy.js';
import { parseRules } from './core/rules.js';
import { MAX_TIME } from './core/duration.js';
import { anchoredClock } from './core/clock.js';
import { RatekeeperError, show } from './core/errors.js';
import { checkOptions } from './core/options.js';
import { MemoryStore } from './stores/memory.js';
import type { BoundStore, OverrideEntry, Store } from './stores/types.js';
import { DenialCache } from './denialCache.js';
import { Observer, type Stats } from './observe/observer.js';
import { Sharing } from './observe/sharing.js';
import {
  LIMITER_OPTIONS, MAX_KEY_LENGTH, PEEK_OPTIONS, SUCCEED_OPTIONS, autoBlock_, callOptions, cost_, key_,
  type BlockOptions, type CheckOptions, type ExemptOptions, type Inspection, type ListOptions, type SucceedOptions,
  type TopEntry, type TopOptions, type LimiterBaseOptions,
} from './limiter/options.js';
import { Listing } from './limiter/listing.js';
import * as commands from './limiter/commands.js';
import * as observation from './limiter/observation.js';
import { unasked, vetoed, type Combinable } from './limiter/combinable.js';

export { MAX_KEY_LENGTH, key_, cost_ } from './limiter/options.js';
export type { LimiterBaseOptions, BlockOptions, CheckOptions, ExemptOptions, Inspection, ListOptions, SucceedOptions, TopEntry, TopOptions } from './limiter/options.js';
export type { Combinable } from './limiter/combinable.js';

/** LimiterOptions — a limiter's policy, store and clock (limiter/options.ts), and the limiter it replaces. */
export interface LimiterOptions extends LimiterBaseOptions {
  /**
   * succeeds — the limiter this one replaces (a reload that changed its rules), on the same store. When the rules are
   * compatible (the same number of rules, in order, each of the same algorithm and `per`: Policy.compatible) every
   * client's state, block and exemption carries over, judged by the new rules in the count sense (2 used of 2/min →
   * 98 left of 100/min; 50 used of 100/min → refused under 2/min); otherwise the clients start fresh. The old limiter
   * should not be used afterwards. On Redis the state is shared by key, see redisStore's `id`.
   */
  succeeds?: Limiter;
}

/**
 * Limiter — the public façade: validates calls, reads the clock once, and asks the store to decide.
 * `check` is the hot path; `checkSync` is its synchronous twin for synchronous stores (the memory store).
 */
export class Limiter implements Combinable {
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
    if (options.clock === undefined) {
      // the default clock in one closure (anchoredClock's arithmetic, without its two wrapper calls): read every check
      const perf = performance;
      const anchor = Date.now() - perf.now();
      this.read = () => anchor + perf.now();
    } else {
      const monotonic = clock.monotonic;
      this.read = monotonic === undefined ? () => clock.now() : anchoredClock(() => clock.now(), () => monotonic.call(clock));
    }
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
      const cost = options === undefined ? 1 : cost_(options, 'check');
      const k = key_(key);
      // the bound store read once (its getter completes a pending takeover), the time as `time()` gives it
      const bound = this.bound;
      const now = options !== undefined && options.now !== undefined ? this.time(options) : bound.ownClock ? undefined : this.tick();
      const cache = this.denialCache;
      const obs = this.observer;
      if (cache !== undefined) {
        const p = this.cached(cache, k, cost, now, now ?? this.tick());
        return obs === undefined ? p : this.observed(obs, p, k, cost, now);
      }
      const d = bound.evaluate(k, cost, now);
      if (bound.sync) {
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
    const bound = this.bound;
    if (!bound.sync) throw new RatekeeperError(`checkSync needs a synchronous store such as memoryStore(); use check() with this one`, 'ERR_ARGUMENT');
    const cost = options === undefined ? 1 : cost_(options, 'checkSync');
    const k = key_(key);
    const now = (options !== undefined && options.now !== undefined ? this.time(options) : bound.ownClock ? undefined : this.tick()) as number;
    const d = bound.evaluate(k, cost, now) as Decision;
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
  refund(key: string, options?: CheckOptions): Promise<Decision> {
    return commands.refund(this, key, options);
  }

  /** reset — forgets `key`'s rule state; blocks and exemptions stay. */
  reset(key: string): Promise<void> {
    return commands.reset(this, key);
  }

  /** block — refuses `key` (for a while, or until `unblock`), charging no rule. The later of block/exempt wins. */
  block(key: string, options: BlockOptions = {}): Promise<void> {
    return commands.override(this, this.listing, 'block', key, options);
  }

  /** unblock — lifts `key`'s block, if it has one. */
  unblock(key: string): Promise<void> {
    return commands.unblock(this, this.listing, key);
  }

  /** exempt — admits `key` without charging any rule (for a while, or until `unexempt`). The later of block/exempt wins. */
  exempt(key: string, options: ExemptOptions = {}): Promise<void> {
    return commands.override(this, this.listing, 'exempt', key, options);
  }

  /** unexempt — lifts `key`'s exemption, if it has one. */
  unexempt(key: string): Promise<void> {
    return commands.unexempt(this, this.listing, key);
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
  top(options: TopOptions = {}): Promise<TopEntry[]> {
    return observation.top(this, this.listing, options);
  }

  /** inspect — `key`'s state now: every rule's as a cost-0 decision (nothing charged), its block or exemption, its observed rate. */
  inspect(key: string, options: { now?: number } = {}): Promise<Inspection> {
    return observation.inspect(this, key, options);
  }

  /** blocks — the blocks in force now, on every store (on Redis, from the index the scripts keep). */
  blocks(options: ListOptions = {}): Promise<OverrideEntry[]> {
    return observation.listed(this, this.listing, 'block', options);
  }

  /** exemptions — the exemptions in force now. */
  exemptions(options: ListOptions = {}): Promise<OverrideEntry[]> {
    return observation.listed(this, this.listing, 'exempt', options);
  }

  /** stats — decisions by outcome and by refusing rule since the start, and per bucket from `from` (ms). Needs `observe`. */
  stats(options: { from?: number; now?: number } = {}): Stats {
    return observation.stats(this, options);
  }

  /** listing — the latest listing of a shared store's overrides (limiter/listing.ts), dropped by every change made here. */
  private readonly listing = new Listing();

  // Combinable: what checkAll sees of a limiter (limiter/combinable.ts, where each is documented). @internal

  get cachesDenials(): boolean {
    return this.denialCache !== undefined;
  }

  get denialEpoch(): number {
    return this.denialCache?.epoch ?? 0;
  }

  denied(key: string, cost: number, at: number): Decision | undefined {
    const hit = this.denialCache?.get(key, cost, at);
    if (hit !== undefined) this.observer?.record(key, cost, hit, at);
    return hit;
  }

  remember(key: string, cost: number, at: number, d: Decision, epoch: number): void {
    this.denialCache?.put(key, cost, at, d, epoch);
  }

  record(key: string, cost: number, d: Decision, at: number | undefined): void {
    const obs = this.observer;
    if (obs !== undefined) obs.record(key, cost, d, at ?? this.tick());
  }

  unasked(): Decision {
    return unasked(this.policy);
  }

  vetoed(d: Decision, after: Decision): Decision {
    return vetoed(this.policy, d, after);
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

  /** tick — the clock's time, never stepping back. @internal */
  tick(): number {
    const t = this.read();
    if (t > this.last) this.last = t;
    return this.last;
  }
}

/** limiter — makes a {@link Limiter}. Bad configuration throws here, naming the rule, field and value. */
export function limiter(options: LimiterOptions): Limiter {
  return new Limiter(options);
}
