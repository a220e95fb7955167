import { countConstants, countSlack, floorRemaining, type RuleConfig } from './common.js';

/**
 * Log — the admitted (or, under strict accounting, attempted) requests of one client, oldest first: a ring of
 * (time, running cost total) pairs, so that the cost in any time window is a difference of two totals found by
 * binary search. Times never decrease (a request stamped before the newest entry is filed at the newest time),
 * and requests in the same millisecond share one entry.
 *
 * The ring lives in any Float64Array: its own (a standalone log), or a few numbers of a table's slab that the log is
 * pointed at with {@link Log.view} for one decision (the memory store keeps a short log inline in each client's slot
 * and gives a longer one an array of its own). It grows on demand by doubling into a new array of its own.
 */
export class Log {
  /** buf, at, cap — the ring: entry k (0 = oldest) has its time at buf[at + 2·((head + k) mod cap)], its total next. */
  buf: Float64Array;
  at = 0;
  cap: number;
  /** head — the ring index of the oldest entry (0 … cap − 1). */
  head = 0;
  /** size — entries in the log (<= cap). */
  size = 0;
  /** base — the running total before the oldest entry (what the dropped entries summed to). */
  base = 0;

  constructor(capacity = 4) {
    this.buf = new Float64Array(2 * capacity);
    this.cap = capacity;
  }

  /** view — points the log at a ring of `cap` entries at buf[at …] with the given head, size and base. */
  view(buf: Float64Array, at: number, cap: number, head: number, size: number, base: number): void {
    this.buf = buf;
    this.at = at;
    this.cap = cap;
    this.head = head;
    this.size = size;
    this.base = base;
  }

  /** slot — the index in buf of entry k's time. */
  private slot(k: number): number {
    const i = this.head + k;
    return this.at + 2 * (i < this.cap ? i : i - this.cap);
  }
  time(k: number): number {
    return this.buf[this.slot(k)];
  }
  /** cum — the running total through entry k; cum(−1) is the base. */
  cum(k: number): number {
    return k < 0 ? this.base : this.buf[this.slot(k) + 1];
  }
  /** total — the running total through the newest entry. */
  get total(): number {
    return this.cum(this.size - 1);
  }
  /** newest — the newest entry's time, or −Infinity when empty. */
  get newest(): number {
    return this.size > 0 ? this.time(this.size - 1) : -Infinity;
  }

  /** firstAfter — index of the oldest entry with time > t (size when none). */
  firstAfter(t: number): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.time(mid) > t) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** firstReaching — index of the oldest entry whose running total is >= c (size when none). */
  firstReaching(c: number): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cum(mid) >= c) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** since — the cost filed after time t (the window (t, ∞)). */
  since(t: number): number {
    return this.total - this.cum(this.firstAfter(t) - 1);
  }

  /** push — files `cost` at `now` (at the newest time if the clock stepped back). */
  push(now: number, cost: number): void {
    const total = this.total;
    if (this.size > 0 && now <= this.newest) {
      this.buf[this.slot(this.size - 1) + 1] = total + cost;
      return;
    }
    if (this.size === this.cap) this.grow();
    const i = this.slot(this.size);
    this.buf[i] = now;
    this.buf[i + 1] = total + cost;
    this.size++;
  }

  /**
   * trim — drops the entries no rule can look at again: those at or before `before`, and the oldest ones while
   * the entries newer than them already hold more than `enough` (any window that reaches back to them is over its
   * limit through the newer entries alone, even for a look of cost 0, and they expire first).
   */
  trim(before: number, enough: number): void {
    const total = this.total;
    let drop = this.firstAfter(before);
    while (drop < this.size && total - this.cum(drop) > enough) drop++;
    if (drop === 0) return;
    this.base = this.cum(drop - 1);
    const h = this.head + drop;
    this.head = h < this.cap ? h : h - this.cap;
    this.size -= drop;
    if (this.size === 0) {
      this.head = 0;
      this.base = 0;
    }
  }

  /**
   * refund — removes the newest entries worth `cost` (the newest remaining one keeps what is left of it): the log as
   * if that much of its latest filings had not happened. Never below an empty log. Entries an earlier trim dropped as
   * unreachable (more than the largest limit newer than them: strict accounting) do not come back.
   */
  refund(cost: number): void {
    if (this.size === 0 || !(cost > 0)) return;
    const target = this.total - cost;
    const eps = (Math.abs(this.total) + cost) * 1e-12;
    // k — the oldest entry whose running total is over the target: it goes, with every newer one, or keeps the rest
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cum(mid) > target + eps) hi = mid;
      else lo = mid + 1;
    }
    if (this.cum(lo - 1) >= target - eps) {
      this.size = lo;
    } else {
      this.buf[this.slot(lo) + 1] = target;
      this.size = lo + 1;
    }
    if (this.size === 0) {
      this.head = 0;
      this.base = 0;
    }
  }

  /** copyTo — writes the entries oldest first, unwrapped, at out[at …] (2 numbers each). */
  copyTo(out: Float64Array, at: number): void {
    for (let k = 0; k < this.size; k++) {
      const i = this.slot(k);
      out[at + 2 * k] = this.buf[i];
      out[at + 2 * k + 1] = this.buf[i + 1];
    }
  }

  /** grow — doubles the capacity into an array of the log's own. */
  private grow(): void {
    const cap = this.cap * 2;
    const buf = new Float64Array(2 * cap);
    this.copyTo(buf, 0);
    this.buf = buf;
    this.at = 0;
    this.cap = cap;
    this.head = 0;
  }
}

/** enoughFor — what a shared log must keep for rules of these limits: the largest, plus its comparison tolerance. */
export function enoughFor(limits: number[]): number {
  const most = Math.max(0, ...limits);
  return most + countSlack(most);
}

/**
 * SlidingLog — the exact sliding window: admits while the cost in (now − per, now] plus this request's cost is at
 * most `limit`. Every slidingLog rule of a policy reads one shared {@link Log} (the multi-rule log of the
 * DomainTools design: 1/s, 20/min, 200/h and 800/day over one list of timestamps), trimmed to what the largest
 * limit and longest period can still see.
 */
export class SlidingLog {
  private readonly slack: number;

  constructor(readonly config: RuleConfig) {
    this.slack = countConstants(config).slack;
  }

  /** used — cost in the window ending at `now`. */
  used(log: Log, now: number): number {
    return log.since(now - this.config.per);
  }

  admits(log: Log, now: number, cost: number): boolean {
    return this.used(log, now) + cost <= this.config.limit + this.slack;
  }

  remaining(log: Log, now: number): number {
    return floorRemaining(this.config.limit - this.used(log, now), this.slack);
  }

  /**
   * wait — ms until the window has room for `cost`: the entries have to slide out oldest first until the
   * running total before the window's first entry reaches total + cost − limit; the last of them to go is
   * entry k, which leaves the window at time(k) + per.
   */
  wait(log: Log, now: number, cost: number): number {
    const { limit, per } = this.config;
    if (this.admits(log, now, cost)) return 0;
    if (cost > limit + this.slack) return Infinity;
    const k = log.firstReaching(log.total + cost - limit - this.slack);
    return log.time(k) + per - now;
  }

  resetAfter(log: Log, now: number): number {
    return this.used(log, now) > 0 ? log.newest + this.config.per - now : 0;
  }
}
