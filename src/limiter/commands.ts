/**
 * limiter/commands — what an operator (or the middleware) changes on one client, beside the rules' own accounting:
 * refund, reset, block, unblock, exempt, unexempt. Each drops the client's denial-cache entry and the limiter's
 * listing before and after the store's change (a check in flight meanwhile must not bring an old answer back).
 * Functions over the narrow {@link Commanded} view, called by the Limiter's methods of the same names.
 */
import type { Decision, Override } from '../core/types.js';
import { parseDuration } from '../core/duration.js';
import { RatekeeperError, show } from '../core/errors.js';
import type { BoundStore } from '../stores/types.js';
import type { DenialCache } from '../denialCache.js';
import { BLOCK_OPTIONS, EXEMPT_OPTIONS, callOptions, cost_, key_, type BlockOptions, type CheckOptions, type ExemptOptions } from './options.js';
import type { Listing } from './listing.js';

/** Commanded — what a command needs of its limiter: the bound store, the denial cache, the clock. */
export interface Commanded {
  readonly bound: BoundStore;
  readonly denialCache: DenialCache | undefined;
  /** time — the call's time: its explicit `now`, else undefined for a store with its own clock, else the limiter's. */
  time(options: CheckOptions | undefined): number | undefined;
  tick(): number;
}

/** refund — Limiter.refund: gives back `cost` units `key` was charged; resolves to what a look of cost 0 sees afterwards. */
export async function refund(l: Commanded, key: string, options: CheckOptions | undefined): Promise<Decision> {
  const k = key_(key);
  const cost = cost_(options, 'refund');
  const now = l.time(options);
  const bound = l.bound;
  if (bound.refund === undefined) throw new RatekeeperError(`refund needs a store that can give back a charge; this one has no refund()`, 'ERR_ARGUMENT');
  l.denialCache?.invalidate(k);
  const d = await bound.refund(k, cost, now, false);
  l.denialCache?.invalidate(k);
  return d;
}

/** reset — Limiter.reset: forgets `key`'s rule state; blocks and exemptions stay. */
export async function reset(l: Commanded, key: string): Promise<void> {
  const k = key_(key);
  l.denialCache?.invalidate(k);
  await l.bound.reset(k);
  l.denialCache?.invalidate(k);
}

/** override — Limiter.block and exempt: sets `key`'s block or exemption (`for`: until lifted when absent). */
export async function override(
  l: Commanded, listing: Listing, kind: Override['kind'], key: string, options: BlockOptions | ExemptOptions,
): Promise<void> {
  callOptions(options, kind === 'block' ? BLOCK_OPTIONS : EXEMPT_OPTIONS, kind);
  const k = key_(key);
  const ms = options.for === undefined ? Infinity : parseDuration(options.for, `${kind}.for`);
  if (options.reason !== undefined && typeof options.reason !== 'string') {
    throw new RatekeeperError(`${kind}.reason must be a string, got ${show(options.reason)}`, 'ERR_ARGUMENT');
  }
  l.denialCache?.invalidate(k);
  listing.drop();
  await l.bound.setOverride(k, { kind, for: ms, reason: options.reason }, l.bound.ownClock ? undefined : l.tick());
  l.denialCache?.invalidate(k);
  listing.drop();
}

/** unblock — Limiter.unblock: lifts `key`'s block, if it has one. */
export async function unblock(l: Commanded, listing: Listing, key: string): Promise<void> {
  const k = key_(key);
  l.denialCache?.invalidate(k);
  listing.drop();
  await l.bound.clearOverride(k, 'block');
  l.denialCache?.invalidate(k);
  listing.drop();
}

/** unexempt — Limiter.unexempt: lifts `key`'s exemption, if it has one. */
export async function unexempt(l: Commanded, listing: Listing, key: string): Promise<void> {
  listing.drop();
  await l.bound.clearOverride(key_(key), 'exempt');
  listing.drop();
}
