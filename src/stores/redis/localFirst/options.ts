/**
 * localFirst/options — the Redis store's `localFirst` option (LocalFirstOptions, documented on the type) and its
 * validation; every error names the option and the value.
 */
import { RatekeeperError, show } from '../../../core/errors.js';
import { checkOptions } from '../../../core/options.js';
import { parseDuration, type Duration } from '../../../core/duration.js';

/**
 * LocalFirstOptions — decide in-process on a copy of each client's state and sync it with Redis in batches
 * (docs/fleet.md states and derives the bound). With N instances, at most (N − 1) × maxUnsynced cost units per
 * client are admitted beyond what the exact mode admits (N × maxUnsynced with `cold: 'fresh'`; per window for the
 * window algorithms and the sliding log, and as many more under an automatic block the others have not learned yet),
 * the long-run rate is the exact mode's where the state carries a debt, and no decision is made on a copy older than
 * `flushEvery`.
 * @example redisStore({ client, localFirst: { maxUnsynced: 5, flushEvery: '20ms' } })
 */
export interface LocalFirstOptions {
  /**
   * maxUnsynced — cost units of one client this instance may charge (admitted, and refused under strict accounting)
   * before Redis has seen them; units in a flush Redis has not answered yet count. Reaching it sends the client's
   * charges at once; a check that would pass it waits for that flush's answer. 0 is the exact mode (every check
   * decided by Redis). A finite number >= 0.
   */
  maxUnsynced: number;
  /**
   * flushEvery — the longest a charge waits before it is sent, and the oldest a copy may be when it decides: a client
   * not synced for longer is fetched (one round trip) before its next decision. A duration > 0 and at most 60 s.
   * @example '20ms'
   */
  flushEvery: Duration;
  /**
   * cold — a client this instance holds no fresh copy of: `'fetch'` reads its state from Redis before deciding (one
   * round trip: blocks and exemptions are honoured on first sight); `'fresh'` decides it as a fresh client at once
   * (no round trip; its block or exemption is learned at the first flush, and the bound is N × maxUnsynced).
   * @default 'fetch'
   */
  cold?: 'fetch' | 'fresh';
  /**
   * maxKeys — the most clients this instance keeps a copy of (per policy); past it the least recently used copies
   * with nothing unsynced are dropped (one with unsynced charges is flushed first). An integer >= 1.
   * @default 100_000
   */
  maxKeys?: number;
  /**
   * maxLogEntries — for a policy with slidingLog rules: the entries the copies' logs have room for together (per
   * policy; 16 bytes each); past it the least recently used idle copies are dropped, as past maxKeys. One copy's log
   * holds at most 1 024 entries as synced (a longer log is not copied: that client is decided by the exact mode) plus
   * the charges made since. An integer >= 1.
   * @default 1_048_576
   */
  maxLogEntries?: number;
}

/** LocalFirstSettings — the options read and checked, defaults filled in, times in ms. */
export interface LocalFirstSettings {
  maxUnsynced: number;
  flushEvery: number;
  cold: 'fetch' | 'fresh';
  maxKeys: number;
  maxLogEntries: number;
}

const LOCAL_FIRST_OPTIONS: ReadonlySet<string> = new Set(['maxUnsynced', 'flushEvery', 'cold', 'maxKeys', 'maxLogEntries']);

/** MAX_FLUSH_EVERY — the longest flushEvery accepted, ms: a copy older than a minute is no longer a fleet's view. */
export const MAX_FLUSH_EVERY = 60_000;

/** readLocalFirst — the `localFirst` option checked (undefined, or maxUnsynced 0: the exact mode). */
export function readLocalFirst(o: unknown): LocalFirstSettings | undefined {
  if (o === undefined) return undefined;
  if (typeof o !== 'object' || o === null) throw new RatekeeperError(`redisStore.localFirst must be an object like { maxUnsynced: 5, flushEvery: '20ms' }, got ${show(o)}`);
  checkOptions(o, LOCAL_FIRST_OPTIONS, 'redisStore.localFirst');
  const lf = o as LocalFirstOptions;
  const m = lf.maxUnsynced;
  if (typeof m !== 'number' || !Number.isFinite(m) || m < 0) {
    throw new RatekeeperError(`redisStore.localFirst.maxUnsynced must be a finite number of cost units >= 0 (0: the exact mode), got ${show(m)}`);
  }
  if (lf.flushEvery === undefined) throw new RatekeeperError(`redisStore.localFirst.flushEvery is required: the longest a charge waits before it is sent (e.g. '20ms')`);
  if (lf.flushEvery === 0 || lf.flushEvery === '0') throw new RatekeeperError(`redisStore.localFirst.flushEvery must be a duration > 0 (maxUnsynced: 0 is the exact mode), got ${show(lf.flushEvery)}`);
  const every = parseDuration(lf.flushEvery, 'redisStore.localFirst.flushEvery');
  if (every > MAX_FLUSH_EVERY) throw new RatekeeperError(`redisStore.localFirst.flushEvery must be at most ${MAX_FLUSH_EVERY} ms (a copy that old is no longer the fleet's view), got ${show(lf.flushEvery)}`);
  const cold = lf.cold ?? 'fetch';
  if (cold !== 'fetch' && cold !== 'fresh') throw new RatekeeperError(`redisStore.localFirst.cold must be 'fetch' or 'fresh', got ${show(lf.cold)}`);
  const maxKeys = lf.maxKeys ?? 100_000;
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new RatekeeperError(`redisStore.localFirst.maxKeys must be an integer >= 1, got ${show(lf.maxKeys)}`);
  const maxLogEntries = lf.maxLogEntries ?? 1 << 20;
  if (!Number.isSafeInteger(maxLogEntries) || maxLogEntries < 1) throw new RatekeeperError(`redisStore.localFirst.maxLogEntries must be an integer >= 1, got ${show(lf.maxLogEntries)}`);
  if (m === 0) return undefined;
  return { maxUnsynced: m, flushEvery: every, cold, maxKeys, maxLogEntries };
}
