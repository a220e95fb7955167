import { Rule, measured, lag, countSlack, TIME_SLACK, MOST_SLACK, NEGLIGIBLE, floorRemaining, type RuleConfig } from './common.js';

/**
 * ExponentialConstants — an exponential rule's derived numbers, computed once by exponentialConstants: the class
 * below keeps them, and the Redis composer writes them into the rule's Lua twin (src/stores/redis/lua/exponential.lua)
 * as literals, so both compare with the same doubles. slack — countSlack(limit) + limit·TIME_SLACK/per, cost units;
 * limSlack — limit + slack; floor — limit·NEGLIGIBLE, cost units per period (an average below it is as good as fresh).
 */
export type ExponentialConstants = { slack: number; limSlack: number; floor: number };

/** exponentialConstants — the derived numbers of an exponential rule (ExponentialConstants). */
export function exponentialConstants(config: RuleConfig): ExponentialConstants {
  const slack = countSlack(config.limit) + (config.limit * TIME_SLACK) / config.per;
  return { slack, limSlack: config.limit + slack, floor: config.limit * NEGLIGIBLE };
}

/** MIN_INTERVAL — Finch's clamp of the interval, in periods, so that two requests in the same instant divide by no zero. */
const MIN_INTERVAL = 1e-10;

/**
 * Exponential — Tony Finch's exponential rate limiter (from Exim's ratelimit): an exponentially weighted moving
 * average of the rate, in cost units per `per`, updated at every request with a weight that depends on the gap:
 *   i = (now − t_prev)/per, α = e^(−i), r = (1 − α)·cost/i + α·r_prev, r = max(r, cost).
 * `per` is the averaging period (the time to forget 63% of the past) and `limit` both the rate per period and the
 * burst: for fast requests (1 − α)/i ≈ 1, so r grows by about `cost` each time and a fresh client hits the limit
 * after about limit/cost requests. max(r, cost) counts a rare request in full instead of as nearly nothing.
 * A request is refused when r > limit; under leaky accounting a refused request is not stored.
 * State: [r — the average rate, cost units per period, t — time of the last update, ms].
 */
export class Exponential extends Rule {
  readonly stateSize = 2;
  private readonly slack: number;

  constructor(config: RuleConfig) {
    super(config);
    this.slack = exponentialConstants(config).slack;
  }

  /** average — r for a request of `cost` after a gap of `i` periods from a stored average `prev`. */
  private static average(prev: number, i: number, cost: number): number {
    if (i < MIN_INTERVAL) i = MIN_INTERVAL;
    const alpha = Math.exp(-i);
    // 1 − α computed as −expm1(−i): for tiny gaps the subtraction would lose every digit.
    const r = (-Math.expm1(-i) / i) * cost + alpha * prev;
    return r > cost ? r : cost;
  }

  next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const t = s[o + 1];
    const r = Exponential.average(s[o], (now - t) / this.config.per, cost);
    n[no] = r;
    n[no + 1] = now > t ? now : t;
    measured.rate = (r * 1000) / this.config.per;
    return r <= this.config.limit + this.slack;
  }

  /** decayed — the stored average forgotten down to `now` (what a zero-cost look would see). */
  private decayed(s: Float64Array, o: number, now: number): number {
    const gap = (now - s[o + 1]) / this.config.per;
    return gap > 0 ? s[o] * Math.exp(-gap) : s[o];
  }

  report(s: Float64Array, o: number, now: number): void {
    const r = this.decayed(s, o, now);
    // The first further cost-1 request's average is what next() would compute (max(r, 1) counts a request after a
    // gap in full); each one after it in the same instant adds about 1.
    const first = Exponential.average(s[o], (now - s[o + 1]) / this.config.per, 1);
    const left = first <= this.config.limit + this.slack ? floorRemaining(this.config.limit - first, this.slack) + 1 : 0;
    const most = Math.floor(this.config.limit + MOST_SLACK); // the time slack is whole requests at high rates
    measured.remaining = left < most ? left : most;
    const floor = this.config.limit * NEGLIGIBLE;
    measured.resetAfter = r > floor ? lag(s[o + 1], now) + this.config.per * Math.log(r / floor) : 0;
  }

  /**
   * wait — the exact time until a request of `cost` would be admitted. Finch's per·ln(r/limit) solves for the
   * decay of r alone; the retried request adds its own (1 − α)·cost/i, so instead solve
   * f(i) = (1 − e^(−i))·cost/i + e^(−i)·r = limit for the gap i. f falls and is convex, so Newton's method from
   * the left converges from below and never overshoots the root.
   */
  wait(s: Float64Array, o: number, now: number, cost: number): number {
    const { limit, per } = this.config;
    const r = s[o];
    const t = s[o + 1];
    let i = (now - t) / per;
    if (Exponential.average(r, i, cost) <= limit + this.slack) return 0;
    if (cost > limit + this.slack) return Infinity;
    // f(i) >= e^(−i)·r, so the root is no earlier than Finch's ln(r/limit): start there (or at the gap).
    const finch = Math.log(r / limit);
    if (i < finch) i = finch;
    if (i < MIN_INTERVAL) i = MIN_INTERVAL;
    for (let k = 0; k < 100; k++) {
      const e = Math.exp(-i);
      const f = (-Math.expm1(-i) / i) * cost + e * r - limit;
      const df = cost * Exponential.slope(i, e) - e * r;
      const step = f / df;
      i -= step;
      if (!(Math.abs(step) > i * 1e-15)) break;
    }
    const w = t + i * per - now;
    return w > 0 ? w : 0;
  }

  /**
   * slope — d/di of (1 − e^(−i))/i, that is (e^(−i)(1 + i) − 1)/i², by its series where the subtraction would
   * cancel (−1/2 + i/3 − i²/8 + i³/30 …).
   */
  private static slope(i: number, e: number): number {
    if (i < 1e-3) return -0.5 + i * (1 / 3 - i * (1 / 8 - i / 30));
    return (e * (1 + i) - 1) / (i * i);
  }

  /**
   * refund — the average r, as of the latest update, loses `cost`, never below 0. The update cannot be inverted
   * exactly (the gap before it is not kept): a charge after a gap of i periods added (1 − e^(−i))/i·cost, which is
   * `cost` for back-to-back requests, so this is exact for those and otherwise gives back up to
   * (1 − (1 − e^(−i))/i)·cost more than the charge added (the nearest inverse, on the lenient side).
   */
  refund(s: Float64Array, o: number, _now: number, cost: number): void {
    const r = s[o] - cost;
    s[o] = r > 0 ? r : 0;
  }
}
