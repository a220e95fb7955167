import type { Decision, RuleOutcome } from './core/types.js';
import type { Policy } from './core/policy.js';
import { RatekeeperError, show } from './core/errors.js';
import { checkOptions } from './core/options.js';

const DENIAL_CACHE_OPTIONS: ReadonlySet<string> = new Set(['maxKeys']);

/** DenialCacheOptions — the local cache of denials. */
export interface DenialCacheOptions {
  /** maxKeys — the most keys remembered; past it the oldest entry is dropped. @default 10_000 */
  maxKeys?: number;
}

/** Entry — one refused key: refused until `until` (local ms) for requests of `cost`. */
interface Entry {
  until: number;
  at: number;
  cost: number;
  decision: Decision;
}

/**
 * DenialCache — answers a key that was just refused in-process until its retryAfter has passed, without a round
 * trip to the store. Exact only where a refused attempt changes no state (every rule leaky, not dry-run): then, with
 * no other traffic, the store would refuse the same request until retryAfter, and other traffic only makes it later.
 * Only `'limited'` refusals with a finite retryAfter are kept, only requests of the same cost are answered (retryAfter
 * depends on the cost), and any admission of the key through the store drops its entry (the state changed).
 */
export class DenialCache {
  readonly maxKeys: number;
  /** hits — requests answered from the cache (round trips saved). */
  hits = 0;
  /** entries — key → refusal, in insertion order (the first one is the oldest, dropped first); size <= maxKeys. */
  private readonly entries = new Map<string, Entry>();
  /**
   * epoch — bumped by every reset, block, unblock or exempt made through the limiter: a refusal decided by a check
   * that was already in flight then is not remembered (it may predate the change).
   */
  epoch = 0;

  constructor(options: DenialCacheOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`denialCache must be true, false or an options object like { maxKeys: 10_000 }, got ${show(options)}`);
    checkOptions(options, DENIAL_CACHE_OPTIONS, 'denialCache');
    const max = options.maxKeys ?? 10_000;
    if (!Number.isSafeInteger(max) || max < 1) throw new RatekeeperError(`denialCache.maxKeys must be an integer >= 1, got ${show(max)}`);
    this.maxKeys = max;
  }

  /** eligible — whether a policy's refusals change nothing, so that caching them is exact. */
  static eligible(policy: Policy): boolean {
    return !policy.dryRun && policy.rules.every((r) => r.accounting === 'leaky');
  }

  get size(): number {
    return this.entries.size;
  }

  /** get — the cached refusal of `key` for a request of `cost` at local time `now` (ms), its waits moved to now. */
  get(key: string, cost: number, now: number): Decision | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (now >= e.until) {
      this.entries.delete(key);
      return undefined;
    }
    if (cost !== e.cost) return undefined;
    this.hits++;
    const gone = now - e.at;
    const d = e.decision;
    const rules = d.rules.map((r): RuleOutcome => ({ ...r, retryAfter: later(r.retryAfter, gone), resetAfter: later(r.resetAfter, gone) }));
    return { ...d, retryAfter: e.until - now, resetAfter: later(d.resetAfter, gone), rules };
  }

  /**
   * put — the store's decision for `key`, from a check that began in `epoch`: a refusal made for a request of `cost`
   * at local time `now` is remembered, unless the key's state may have changed since the check began; anything else
   * drops the entry.
   */
  put(key: string, cost: number, now: number, d: Decision, epoch: number): void {
    if (epoch !== this.epoch) return;
    if (d.allowed) {
      this.entries.delete(key);
      return;
    }
    if (d.reason !== 'limited' || d.fallback === true || !(d.retryAfter > 0) || d.retryAfter === Infinity) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxKeys) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { until: now + d.retryAfter, at: now, cost, decision: d });
  }

  /** invalidate — forgets `key`'s refusal, and any refusal of a check still in flight (see `epoch`). */
  invalidate(key: string): void {
    this.entries.delete(key);
    this.epoch++;
  }
}

/** later — a wait of `ms` seen `gone` ms later (never below 0; Infinity stays). */
function later(ms: number, gone: number): number {
  const left = ms - gone;
  return left > 0 ? left : 0;
}
