import { Rule, measured, lag, REL_SLACK, TIME_SLACK, MOST_SLACK, NEGLIGIBLE, floorRemaining, type RuleConfig } from './common.js';

/**
 * EarrrlConstants — an earrrl rule's derived numbers, computed once by earrrlConstants: the class below keeps them,
 * and the Redis composer writes them into the rule's Lua twin (src/stores/redis/lua/earrrl.lua) as literals, so both
 * compare with the same doubles. lambda — λ = ln 2 / halfLife, per ms; negLambda — −λ; threshold — limit/per, cost
 * units per ms; slack — threshold·(REL_SLACK + λ·TIME_SLACK), cost units per ms; thrSlack — threshold + slack;
 * thrL — threshold/λ, cost units; slackL — slack/λ, cost units; floor — threshold·NEGLIGIBLE, cost units per ms (an
 * estimate below it is as good as fresh).
 */
export type EarrrlConstants = {
  lambda: number; negLambda: number; threshold: number; slack: number; thrSlack: number; thrL: number; slackL: number; floor: number;
};

/** earrrlConstants — the derived numbers of an earrrl rule (EarrrlConstants). */
export function earrrlConstants(config: RuleConfig): EarrrlConstants {
  const lambda = Math.LN2 / config.halfLife;
  const threshold = config.limit / config.per;
  const slack = threshold * (REL_SLACK + lambda * TIME_SLACK);
  return {
    lambda, negLambda: -lambda, threshold, slack, thrSlack: threshold + slack,
    thrL: threshold / lambda, slackL: slack / lambda, floor: threshold * NEGLIGIBLE,
  };
}

/**
 * Earrrl — the Estimated Average Recent Request Rate Limiter, over CEWMA: a continuous exponentially weighted
 * moving average of the request rate with weight λ·e^(−λ·age), λ = ln 2 / halfLife.
 *
 * Each request is an impulse: an infinitely high rate for an instant whose integral is its cost. The CEWMA of an
 * impulse of size N that happened `age` ago is N·λ·e^(−λ·age), and impulses add, so the whole history can be
 * folded into one equivalent impulse N at the time T of the last request: on a request at `now`,
 * N ← cost + N·e^(−λ(now − T)) and T ← now. The estimate *before* a request is N·λ·e^(−λ(now − T)); the request
 * is limited when that estimate is over limit/per, whatever its own cost (as the EARRRL write-up defines it).
 *
 * A fresh client may therefore send about 1 + (limit/per)/λ requests at once; a client that keeps sending over
 * the limit never gets a new window: under the default strict accounting every refused attempt is an impulse
 * too, and it is let back in only once its recent average has fallen under the limit.
 * State: [n — the equivalent impulse, cost units, t — time of the last update, ms].
 */
export class Earrrl extends Rule {
  readonly stateSize = 2;
  /** lambda — λ = ln 2 / halfLife, per ms. */
  private readonly lambda: number;
  /** threshold — limit/per, cost units per ms. */
  private readonly threshold: number;
  /** slack — tolerance of the threshold comparison, cost units per ms. */
  private readonly slack: number;

  constructor(config: RuleConfig) {
    super(config);
    const k = earrrlConstants(config);
    this.lambda = k.lambda;
    this.threshold = k.threshold;
    this.slack = k.slack;
  }

  /** decayed — the equivalent impulse moved to `now`: N·e^(−λ(now − T)). */
  private decayed(s: Float64Array, o: number, now: number): number {
    const age = now - s[o + 1];
    return age > 0 ? s[o] * Math.exp(-this.lambda * age) : s[o];
  }

  next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const d = this.decayed(s, o, now);
    const estimate = d * this.lambda;
    const t = s[o + 1];
    n[no] = cost + d;
    n[no + 1] = now > t ? now : t;
    measured.rate = estimate * 1000;
    return estimate <= this.threshold + this.slack;
  }

  report(s: Float64Array, o: number, now: number): void {
    const d = this.decayed(s, o, now);
    // The j-th further request sees an impulse of d + j − 1 and is admitted while (d + j − 1)·λ <= threshold.
    const r = floorRemaining(this.threshold / this.lambda - d + 1, this.slack / this.lambda);
    // at most the fresh burst, 1 + threshold/λ: at high rates the time slack is worth whole requests
    const most = Math.floor(this.threshold / this.lambda + 1 + MOST_SLACK);
    measured.remaining = r < most ? r : most;
    const estimate = d * this.lambda;
    const floor = this.threshold * NEGLIGIBLE;
    measured.resetAfter = estimate > floor ? lag(s[o + 1], now) + Math.log(estimate / floor) / this.lambda : 0;
  }

  wait(s: Float64Array, o: number, now: number): number {
    const estimate = this.decayed(s, o, now) * this.lambda;
    if (estimate <= this.threshold + this.slack) return 0;
    return lag(s[o + 1], now) + Math.log(estimate / this.threshold) / this.lambda;
  }

  /**
   * adopt — the equivalent impulse carries over: decayed to `now` with the old half-life (what the client's history
   * weighs at the change), then decaying with the new one and judged against the new limit/per. The estimate is a
   * rate, not a count: a client at 50 of 100/min is refused under 2/min until its estimate falls under 2/min.
   */
  override adopt(from: RuleConfig, s: Float64Array, o: number, now: number): void {
    const t = s[o + 1];
    const age = now - t;
    if (age > 0) {
      s[o] = s[o] * Math.exp((-Math.LN2 / from.halfLife) * age);
      s[o + 1] = now;
    }
  }

  /**
   * refund — the equivalent impulse N, which sits at the time T of the latest update, loses `cost`: the exact inverse
   * when the refunded charge is that latest update (its impulse was added at T undecayed); never below 0.
   */
  refund(s: Float64Array, o: number, _now: number, cost: number): void {
    const n = s[o] - cost;
    s[o] = n > 0 ? n : 0;
  }
}
