import type { Accounting, Algorithm } from '../types.js';

/**
 * RuleConfig — a validated, normalized rule: what `rules.*` returns and what every store runs.
 * All times are ms; `limit` and `burst` are cost units.
 */
export interface RuleConfig {
  readonly algorithm: Algorithm;
  readonly name: string;
  /** limit — cost units per `per`. */
  readonly limit: number;
  /** per — the period in ms. */
  readonly per: number;
  /** burst — cost units a fresh client may spend at once (token/leaky bucket, gcra); `limit` elsewhere. */
  readonly burst: number;
  /** halfLife — earrrl's half-life in ms; 0 for the other algorithms. */
  readonly halfLife: number;
  readonly accounting: Accounting;
}

/**
 * REL_SLACK, TIME_SLACK — the tolerance of every comparison against a limit: 1e-9 of the limit plus what the
 * state moves in 10 µs. A float epoch-ms time is exact to about 0.24 µs, and a GCRA TAT pushed by a
 * non-representable emission interval gathers such errors step by step; without the slack the exact `retryAfter`
 * could land a rounding error short of the limit. It admits at most 10 µs early, never a whole extra request.
 */
export const REL_SLACK = 1e-9;
export const TIME_SLACK = 1e-2;

/**
 * NEGLIGIBLE — the fraction of the limit below which a decaying estimate (earrrl, exponential) counts as gone:
 * from then on the state decides exactly as a fresh client's would, so it may be dropped (resetAfter).
 */
export const NEGLIGIBLE = 1e-6;

/**
 * Rule — one compiled rule over a fixed-size slice of a Float64Array: `stateSize` numbers at offset `o`.
 * All-zero state is a fresh client. Every method is pure in (config, state, now, cost) and reads no clock;
 * a `now` earlier than the state's last update is treated as that update's time (a clock step back admits nothing more).
 */
export abstract class Rule {
  /** stateSize — how many numbers of state the rule keeps per client. */
  abstract readonly stateSize: number;
  /** rate — scratch output of the last `next()`: the measured rate per second, or NaN where none is measured. */
  rate = Number.NaN;
  /** delay — scratch output of the last `next()`: ms to hold the request for smooth output, or NaN. */
  delay = Number.NaN;

  constructor(readonly config: RuleConfig) {}

  /**
   * next — writes into `n[no…]` the state after charging `cost` at `now` (whether or not it is admitted: the
   * policy stores it when the request is admitted, or always under strict accounting) and returns whether
   * this rule admits the request.
   */
  abstract next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean;
  /** remaining — further cost-1 requests the rule would admit at `now` from state `s[o…]`. */
  abstract remaining(s: Float64Array, o: number, now: number): number;
  /** wait — ms from `now` until a request of `cost` would be admitted from state `s[o…]`; Infinity when never. */
  abstract wait(s: Float64Array, o: number, now: number, cost: number): number;
  /** resetAfter — ms from `now` until state `s[o…]` decides as a fresh client's would. */
  abstract resetAfter(s: Float64Array, o: number, now: number): number;
}

/** floorRemaining — whole cost-1 requests that fit in `room`, never negative, forgiving float dust. */
export function floorRemaining(room: number, slack: number): number {
  const r = Math.floor(room + slack);
  return r > 0 ? r : 0;
}
