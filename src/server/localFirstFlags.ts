/**
 * localFirstFlags — the Redis store's local-first mode from `ratekeeper serve`'s flags (--redis-max-unsynced,
 * --redis-flush-every, --redis-cold-fresh: docs/fleet.md) into RedisFlags; each problem a usage error naming
 * its flag. Called by redisFlags (redisOptions.ts).
 */
import { show } from '../core/errors.js';
import { parseDuration } from '../core/duration.js';

/** LocalFirstFlags — the fields of RedisFlags (redisOptions.ts) these flags set. */
export interface LocalFirstFlags {
  maxUnsynced?: number;
  flushEvery?: number;
  coldFresh?: boolean;
  from: Record<string, string>;
}

/** localFirstFlags — reads the flags through `str` (the flag's text, undefined when absent) into `r`. */
export function localFirstFlags(r: LocalFirstFlags, str: (name: string) => string | undefined, coldFresh: boolean, Usage: new (message: string) => Error): void {
  const mu = str('redis-max-unsynced');
  if (mu !== undefined) {
    const n = Number(mu);
    if (!Number.isFinite(n) || n < 0 || mu.trim() === '') throw new Usage(`--redis-max-unsynced must be a number of cost units >= 0 (0: the exact mode), got ${show(mu)}`);
    if (n > 0) r.maxUnsynced = n;
    r.from.maxUnsynced = '--redis-max-unsynced';
  }
  const fe = str('redis-flush-every');
  if (fe !== undefined) {
    if (mu === undefined) throw new Usage('--redis-flush-every needs --redis-max-unsynced (the local-first mode)');
    const ms = /^\s*\d+(\.\d+)?\s*$/.test(fe) ? Number(fe) : durationOf(fe);
    if (ms === undefined || !(ms > 0) || ms > 60_000) throw new Usage(`--redis-flush-every must be ms > 0 and at most 60000 (or a duration like 20ms, 1s), got ${show(fe)}`);
    r.flushEvery = ms;
  }
  if (coldFresh) {
    if (mu === undefined) throw new Usage('--redis-cold-fresh needs --redis-max-unsynced (the local-first mode)');
    r.coldFresh = true;
  }
}

/** durationOf — ms of a duration like 20ms or 1s, or undefined. */
function durationOf(text: string): number | undefined {
  try {
    return parseDuration(text, '--redis-flush-every');
  } catch {
    return undefined;
  }
}
