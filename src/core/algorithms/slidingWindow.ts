import { Rule, measured, countConstants, TIME_SLACK, MOST_SLACK, floorRemaining, type RuleConfig } from './common.js';

/**
 * SlidingWindow — the sliding window counter (Cloudflare's approximation): the previous window's count, weighted
 * by how much of it the sliding window [now − per, now] still overlaps, plus the current window's count.
 * Admits while prev·(1 − (now − start)/per) + curr + cost <= limit. Windows are aligned to the epoch.
 * The estimate is continuous across a window boundary (the weight of the new previous window starts at 1),
 * so a burst at a boundary is not forgiven the way a fixed window forgives it.
 * State: [prev — the previous window's count, curr — the current window's count, start — current window start, ms].
 */
export class SlidingWindow extends Rule {
  readonly stateSize = 3;
  private readonly slack: number;
  // Scratch of roll(): the counts and window start as of the last `now` given to it.
  private prev = 0;
  private curr = 0;
  private start = 0;
  /** tolerance — of the limit comparison as of the last roll(), cost units. */
  private tolerance = 0;

  constructor(config: RuleConfig) {
    super(config);
    this.slack = countConstants(config).slack;
  }

  /** roll — moves the stored windows to `now` into prev/curr/start and returns the weighted estimate. */
  private roll(s: Float64Array, o: number, now: number): number {
    const per = this.config.per;
    const w = Math.floor(now / per) * per;
    let start = s[o + 2];
    let prev = s[o];
    let curr = s[o + 1];
    if (w > start) {
      prev = w === start + per ? curr : 0;
      curr = 0;
      start = w;
    } else if (now < start) {
      now = start; // the clock stepped back: weigh as at the stored window's start (the strictest point)
    }
    this.prev = prev;
    this.curr = curr;
    this.start = start;
    // the estimate falls by prev/per per ms as the previous window slides out: allow what it moves in TIME_SLACK
    this.tolerance = this.slack + (prev / per) * TIME_SLACK;
    return prev * (1 - (now - start) / per) + curr;
  }

  next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const estimate = this.roll(s, o, now);
    n[no] = this.prev;
    n[no + 1] = this.curr + cost;
    n[no + 2] = this.start;
    return estimate + cost <= this.config.limit + this.tolerance;
  }

  report(s: Float64Array, o: number, now: number): void {
    const estimate = this.roll(s, o, now);
    const per = this.config.per;
    const r = floorRemaining(this.config.limit - estimate, this.tolerance);
    const most = Math.floor(this.config.limit + MOST_SLACK); // the time slack must not report more than the limit
    measured.remaining = r < most ? r : most;
    measured.resetAfter = this.curr > 0 ? this.start + 2 * per - now : this.prev > 0 ? this.start + per - now : 0;
  }

  wait(s: Float64Array, o: number, now: number, cost: number): number {
    const { limit, per } = this.config;
    if (this.roll(s, o, now) + cost <= limit + this.tolerance) return 0;
    if (cost > limit + this.slack) return Infinity;
    const { prev, curr, start } = this;
    const room = limit - cost - curr;
    // Within this window the estimate falls linearly as the previous window slides out:
    // prev·(1 − x/per) <= room  ⇔  x >= per·(1 − room/prev).
    if (room >= 0) return start + per * (1 - room / prev) - now;
    // Otherwise in the next one, where this window's count is the one sliding out.
    const x = per * (1 - (limit - cost) / curr);
    return start + per + (x > 0 ? x : 0) - now;
  }

  /**
   * refund — the count of the window the latest charges went to goes down: the stored current window's, or, when
   * that window has just become the previous one, the previous window's (rolled first); older windows no longer count.
   */
  refund(s: Float64Array, o: number, now: number, cost: number): void {
    const per = this.config.per;
    const w = Math.floor(now / per) * per;
    const start = s[o + 2];
    if (w > start) {
      if (w !== start + per) return;
      const prev = s[o + 1] - cost;
      s[o] = prev > 0 ? prev : 0;
      s[o + 1] = 0;
      s[o + 2] = w;
      return;
    }
    const curr = s[o + 1] - cost;
    s[o + 1] = curr > 0 ? curr : 0;
  }
}
