/**
 * limiter/listing — a limiter's latest listing of its store's blocks and exemptions, reused for `maxAge` ms: a
 * dashboard polling top, blocks and exemptions of a shared store (Redis) pays for one listing, not one per call.
 * Every change made through the limiter (block, unblock, exempt, unexempt) drops it.
 */
import { RatekeeperError } from '../core/errors.js';
import type { BoundStore, OverrideEntry } from '../stores/types.js';

/** Listed — what a listing needs of its limiter: the bound store, and the limiter's clock (ms, never stepping back). */
export interface Listed {
  readonly bound: BoundStore;
  tick(): number;
}

/** Listing — the latest listing of a shared store's overrides and when it was asked for. */
export class Listing {
  /** latest — the listing asked for at `at` (local ms, Date.now()); undefined: none worth reusing. */
  private latest: { at: number; list: Promise<OverrideEntry[]> } | undefined;

  /** drop — forgets the latest listing (a change made through the limiter). */
  drop(): void {
    this.latest = undefined;
  }

  /**
   * overrides — the store's blocks and exemptions in force. With `maxAge` (and no explicit `now`), a listing of a
   * shared store that recent is reused, so one that ended since may still be listed; a change made through the
   * limiter drops it.
   */
  async overrides(of: Listed, now: number | undefined, maxAge = 0): Promise<OverrideEntry[]> {
    const bound = of.bound;
    if (bound.overrides === undefined) throw new RatekeeperError(`this store cannot list blocks and exemptions`, 'ERR_ARGUMENT');
    if (now !== undefined || bound.sync) return bound.overrides(now ?? (bound.ownClock ? undefined : of.tick()));
    const at = Date.now();
    const cached = this.latest;
    if (cached !== undefined && at - cached.at < maxAge && at >= cached.at) {
      return cached.list;
    }
    const list = Promise.resolve(bound.overrides(undefined, maxAge));
    const entry = { at, list };
    this.latest = entry;
    list.catch(() => {
      if (this.latest === entry) this.latest = undefined;
    });
    return list;
  }
}
