/**
 * limiter/options — what a limiter and its calls take: the public option types (documented on their fields), the
 * names each options object may have, and the checks of a call's arguments (key, cost, options) that the façade runs
 * before anything reaches the store. Imports the core's parsers and error type only.
 */
import type { Decision } from '../core/types.js';
import { MAX_AMOUNT } from '../core/rules.js';
import { parseDuration, type Duration } from '../core/duration.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptionsObject } from '../core/options.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import type { Clock } from '../core/types.js';
import type { OverrideEntry, Store } from '../stores/types.js';
import type { DenialCacheOptions } from '../denialCache.js';
import type { ObserveOptions } from '../observe/observer.js';
import type { HeavyHitter } from '../observe/heavyHitters.js';

/** LimiterBaseOptions — a limiter's policy, store and clock: LimiterOptions but `succeeds` (limiter.ts adds it). */
export interface LimiterBaseOptions {
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
export const SUCCEED_OPTIONS: ReadonlySet<string> = new Set(['lazy']);

/** LIMITER_OPTIONS, CHECK_OPTIONS, PEEK_OPTIONS, BLOCK_OPTIONS, EXEMPT_OPTIONS — the names each options object may have. */
export const LIMITER_OPTIONS: ReadonlySet<string> = new Set(['rules', 'store', 'dryRun', 'clock', 'denialCache', 'observe', 'succeeds', 'id', 'namespace', 'autoBlock']);
export const AUTO_BLOCK_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);
export const CHECK_OPTIONS: ReadonlySet<string> = new Set(['cost', 'now']);
export const PEEK_OPTIONS: ReadonlySet<string> = new Set(['now']);
export const BLOCK_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);
export const EXEMPT_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);
/** TOP_OPTIONS, LIST_OPTIONS — the names of top()'s and blocks()/exemptions()'s options. */
export const TOP_OPTIONS: ReadonlySet<string> = new Set(['n', 'by', 'now', 'maxAge']);
export const LIST_OPTIONS: ReadonlySet<string> = new Set(['now', 'maxAge']);

/** MAX_KEY_LENGTH — the longest key accepted, in UTF-16 units: a key is an identifier, not a payload. */
export const MAX_KEY_LENGTH = 4096;

/** autoBlock_ — LimiterOptions.autoBlock checked, its duration in ms (undefined: none). */
export function autoBlock_(auto: { for: Duration; reason?: string } | undefined): { for: number; reason?: string } | undefined {
  if (auto === undefined) return undefined;
  checkOptionsObject(auto, AUTO_BLOCK_OPTIONS, 'limiter.autoBlock');
  if (auto.for === undefined) throw new RatekeeperError(`limiter.autoBlock.for is required: how long a refused client stays blocked, like '15m'`);
  if (auto.reason !== undefined && typeof auto.reason !== 'string') throw new RatekeeperError(`limiter.autoBlock.reason must be a string, got ${show(auto.reason)}`);
  const out: { for: number; reason?: string } = { for: parseDuration(auto.for, 'limiter.autoBlock.for') };
  if (auto.reason !== undefined) out.reason = auto.reason;
  return out;
}

/** key_ — a client key checked: a non-empty string of at most MAX_KEY_LENGTH characters, else an ERR_ARGUMENT. */
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
export function callOptions(options: unknown, known: ReadonlySet<string>, where: string): void {
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
