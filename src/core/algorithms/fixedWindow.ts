import { Rule, measured, countConstants, floorRemaining, type RuleConfig } from './common.js';

/**
 * FixedWindow — a counter per window of `per` ms, windows aligned to the epoch (a window starts at
 * floor(now/per)·per). Admits while count + cost <= limit; everything is forgiven when the next window starts,
 * which is why a client can send 2·limit across a boundary.
 * State: [count — cost admitted in the window, start — the window's start, ms].
 */
export class FixedWindow extends Rule {
  readonly stateSize = 2;
  /** slack — tolerance of the limit comparison, cost units. */
  private readonly slack: number;

  constructor(config: RuleConfig) {
    super(config);
    this.slack = countConstants(config).slack;
  }

  /** count — the window's count at `now`; `start` is returned through this.start. */
  private start = 0;
  private count(s: Float64Array, o: number, now: number): number {
    const per = this.config.per;
    const w = Math.floor(now / per) * per;
    const start = s[o + 1];
    if (w > start) {
      this.start = w;
      return 0;
    }
    this.start = start; // same window, or the clock stepped back into an earlier one: stay in the stored one
    return s[o];
  }

  next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const count = this.count(s, o, now) + cost;
    n[no] = count;
    n[no + 1] = this.start;
    return count <= this.config.limit + this.slack;
  }

  report(s: Float64Array, o: number, now: number): void {
    const count = this.count(s, o, now);
    measured.remaining = floorRemaining(this.config.limit - count, this.slack);
    measured.resetAfter = count > 0 ? this.start + this.config.per - now : 0;
  }

  wait(s: Float64Array, o: number, now: number, cost: number): number {
    const { limit, per } = this.config;
    if (this.count(s, o, now) + cost <= limit + this.slack) return 0;
    if (cost > limit + this.slack) return Infinity;
    return this.start + per - now;
  }

  /** refund — the count goes down in the stored window, if it is still the current one (an older window's charges are already forgiven). */
  refund(s: Float64Array, o: number, now: number, cost: number): void {
    const per = this.config.per;
    if (Math.floor(now / per) * per > s[o + 1]) return;
    const c = s[o] - cost;
    s[o] = c > 0 ? c : 0;
  }
}
