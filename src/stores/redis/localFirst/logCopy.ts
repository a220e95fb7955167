/**
 * localFirst/logCopy — the sizes that bound the local-first mode's copies and calls, and how a copy's sliding log is
 * replaced by the global one a sync returns (lua/localFirst.lua's `return_log`: base, count, entries).
 */
import type { Log } from '../../../core/algorithms/slidingLog.js';

/**
 * MAX_CHARGES — the most charges a copy keeps unsent (a flush carries at most that many): with fractional costs a
 * budget of maxUnsynced units could otherwise be any number of charges, each three strings of the sync's ARGV and an
 * entry of a sliding log. A check past it waits for the flush, as one past the budget does.
 */
export const MAX_CHARGES = 512;

/** CALL_CHARGES — the most charges one sync call carries (its ARGV: at most 3 + 2 × 128 + 3 × CALL_CHARGES strings). */
export const CALL_CHARGES = 4096;

/**
 * fillLog — `log` replaced by the one a sync returned in `r` at byte `at` (base, count, then count entries of time and
 * running total, little-endian doubles), its buffer reused when it fits; returns the count, −1 for a log too long to
 * be returned (the copy's log is then emptied, to a small buffer).
 */
export function fillLog(log: Log, r: Buffer, at: number): number {
  const base = r.readDoubleLE(at);
  const count = r.readDoubleLE(at + 8);
  const n = count < 0 ? 0 : count;
  let cap = Math.max(8, n + (n >> 3));
  let buf = log.buf;
  if (log.at === 0 && log.cap >= n && log.cap <= 2 * cap) cap = log.cap;
  else buf = new Float64Array(2 * cap);
  for (let k = 0, p = at + 16; k < 2 * n; k++, p += 8) buf[k] = r.readDoubleLE(p);
  log.view(buf, 0, cap, 0, n, n > 0 ? base : 0);
  return count;
}

/** logFits — whether `r` holds a whole log at byte `at` (a count −1 or a whole number, and that many entries). */
export function logFits(r: Buffer, at: number): boolean {
  if (r.length < at + 16) return false;
  const count = r.readDoubleLE(at + 8);
  return count === -1 || (Number.isInteger(count) && count >= 0 && r.length >= at + 16 + 16 * count);
}
