import { Rule, measured, lag, countSlack, TIME_SLACK, MOST_SLACK, floorRemaining, type RuleConfig } from './common.js';

/**
 * BucketConstants — a token (or leaky) bucket rule's derived numbers, computed once by bucketConstants: the classes
 * keep them, and the Redis composer writes them into the Lua twins (src/stores/redis/lua/tokenBucket.lua,
 * leakyBucket.lua) as literals, so both compare with the same doubles. perMs — refill (drain) rate limit/per, cost
 * units per ms; slack — countSlack(burst) + perMs·TIME_SLACK, cost units; burstSlack — burst + slack, cost units.
 */
export type BucketConstants = { perMs: number; slack: number; burstSlack: number };

/** bucketConstants — the derived numbers of a tokenBucket or leakyBucket rule (BucketConstants). */
export function bucketConstants(config: RuleConfig): BucketConstants {
  const perMs = config.limit / config.per;
  const slack = countSlack(config.burst) + perMs * TIME_SLACK;
  return { perMs, slack, burstSlack: config.burst + slack };
}

/**
 * TokenBucket — a bucket of `burst` tokens, refilled continuously at limit/per and starting full; a request takes
 * `cost` tokens and is admitted while there are enough. The state keeps the bucket's *debt* (burst − tokens) so
 * that an all-zero state is a full bucket. Under strict accounting a denied request takes its tokens too and the
 * debt may pass `burst`: the client has to stay quiet until it is paid back.
 * State: [debt — tokens missing from a full bucket, t — time of the last update, ms].
 */
export class TokenBucket extends Rule {
  readonly stateSize = 2;
  /** perMs — refill rate, tokens per ms. */
  protected readonly perMs: number;
  protected readonly slack: number;
  /** most — the most `remaining` can be: the whole burst, never what the time slack adds to it at high rates. */
  private readonly most: number;

  constructor(config: RuleConfig) {
    super(config);
    const k = bucketConstants(config);
    this.perMs = k.perMs;
    this.slack = k.slack;
    this.most = Math.floor(config.burst + MOST_SLACK);
  }

  /** debt — the debt at `now`, after the refill since the last update. */
  protected debt(s: Float64Array, o: number, now: number): number {
    const elapsed = now - s[o + 1];
    const d = elapsed > 0 ? s[o] - elapsed * this.perMs : s[o];
    return d > 0 ? d : 0;
  }

  next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const d = this.debt(s, o, now);
    const t = s[o + 1];
    n[no] = d + cost;
    n[no + 1] = now > t ? now : t;
    return d + cost <= this.config.burst + this.slack;
  }

  report(s: Float64Array, o: number, now: number): void {
    const d = this.debt(s, o, now);
    const r = floorRemaining(this.config.burst - d, this.slack);
    measured.remaining = r < this.most ? r : this.most;
    measured.resetAfter = d > 0 ? lag(s[o + 1], now) + d / this.perMs : 0;
  }

  wait(s: Float64Array, o: number, now: number, cost: number): number {
    const burst = this.config.burst;
    const over = this.debt(s, o, now) + cost - burst;
    if (over <= this.slack) return 0;
    if (cost > burst + this.slack) return Infinity;
    return lag(s[o + 1], now) + over / this.perMs;
  }

  /**
   * adopt — the bucket's debt (the used amount, cost units), drained at the old rate up to `now`, carries over as it
   * is: under a larger burst the client has burst − debt left (2 used of 2 → 98 of 100), under a smaller one it waits
   * until the new rate has drained the debt below the new burst. The token count is not kept (that would forgive or
   * punish by the change of burst). A leaky bucket's level is the same number.
   */
  override adopt(from: RuleConfig, s: Float64Array, o: number, now: number): void {
    const t = s[o + 1];
    const elapsed = now - t;
    const d = elapsed > 0 ? s[o] - elapsed * (from.limit / from.per) : s[o];
    s[o] = d > 0 ? d : 0;
    s[o + 1] = now > t ? now : t;
  }

  /** refund — the tokens go back into the bucket (the level down), refilled to `now` first, never beyond a full bucket. */
  refund(s: Float64Array, o: number, now: number, cost: number): void {
    const d = this.debt(s, o, now) - cost;
    const t = s[o + 1];
    s[o] = d > 0 ? d : 0;
    s[o + 1] = now > t ? now : t;
  }
}
