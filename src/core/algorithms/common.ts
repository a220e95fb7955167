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
 * countSlack — the tolerance of a comparison against `units` of cost: 1e-9 of it, but never more than 1e-6 of a
 * cost unit, so that a limit of a billion does not admit one request more (float error at that size is ~1e-7).
 */
export function countSlack(units: number): number {
  const s = units * REL_SLACK;
  return s < 1e-6 ? s : 1e-6;
}

/**
 * CountConstants — the derived numbers of a rule that counts cost against its limit (fixedWindow, slidingWindow,
 * slidingLog), computed once by countConstants: the classes keep them, and the Redis composer writes them into the
 * Lua twins (src/stores/redis/lua/fixedWindow.lua …) as literals, so both compare with the same doubles.
 * slack — countSlack(limit), cost units; limSlack — limit + slack, cost units.
 */
export type CountConstants = { slack: number; limSlack: number };

/** countConstants — the derived numbers of a counting rule (CountConstants). */
export function countConstants(config: RuleConfig): CountConstants {
  const slack = countSlack(config.limit);
  return { slack, limSlack: config.limit + slack };
}

/**
 * MOST_SLACK — what a whole burst or limit is rounded up by before `floor` when it caps `remaining` (cost units):
 * a burst written as τ/T comes back within a few ulps of itself. The time slack of the comparisons (TIME_SLACK) is
 * a whole request or more for rules faster than one per 10 µs, and must not show in `remaining` (`r` > `q`).
 */
export const MOST_SLACK = 1e-6;

/**
 * NEGLIGIBLE — the fraction of the limit below which a decaying estimate (earrrl, exponential) counts as gone:
 * from then on the state decides exactly as a fresh client's would, so it may be dropped (resetAfter).
 */
export const NEGLIGIBLE = 1e-6;

/**
 * measured — scratch outputs of the rules, one object for every rule so that the policy's reads stay monomorphic.
 * `rate` (per second: earrrl, exponential) and `delay` (ms to hold the request for smooth output: leakyBucket) are
 * written by `next()` of the rules that measure them: the caller sets both to NaN before and reads them right
 * after (NaN: not measured). `remaining` and `resetAfter` are written by `report()`.
 */
export const measured = { rate: Number.NaN, delay: Number.NaN, remaining: 0, resetAfter: 0 };

/**
 * Rule — one compiled rule over a fixed-size slice of a Float64Array: `stateSize` numbers at offset `o`.
 * All-zero state is a fresh client. Every method is pure in (config, state, now, cost) and reads no clock;
 * a `now` earlier than the state's last update is treated as that update's time (a clock step back admits nothing more).
 */
export abstract class Rule {
  /** stateSize — how many numbers of state the rule keeps per client. */
  abstract readonly stateSize: number;
  constructor(readonly config: RuleConfig) {}

  /**
   * next — writes into `n[no…]` the state after charging `cost` at `now` (whether or not it is admitted: the
   * policy stores it when the request is admitted, or always under strict accounting) and returns whether
   * this rule admits the request.
   */
  abstract next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean;
  /**
   * report — from state `s[o…]` at `now`, writes `measured.remaining` (further cost-1 requests the rule would admit)
   * and `measured.resetAfter` (ms until the state decides as a fresh client's would).
   */
  abstract report(s: Float64Array, o: number, now: number): void;
  /** wait — ms from `now` until a request of `cost` would be admitted from state `s[o…]`; Infinity when never. */
  abstract wait(s: Float64Array, o: number, now: number, cost: number): number;
  /**
   * refund — gives back `cost` units of the client's latest charges in `s[o…]` at `now`, in place: the state as if
   * that much of the latest admitted charge had not happened (each algorithm says how exact that is), never better
   * than a fresh client's.
   */
  abstract refund(s: Float64Array, o: number, now: number, cost: number): void;
  /**
   * adopt — converts in place a client's state `s[o…]`, written under `from` (the same algorithm and `per`; limit,
   * burst, halfLife or accounting may differ), into this rule's terms at `now`, judged in the count sense: what the
   * client has used carries over, never forgiven, and the new limit judges it. The windows, the sliding log and the
   * exponential average keep their numbers as they are (cost units and times, not rates): this default does nothing.
   */
  adopt(_from: RuleConfig, _s: Float64Array, _o: number, _now: number): void {}
}

/**
 * lag — ms from `now` until `stored` (a state's last update time) when the clock stepped back behind it, else 0:
 * refills and decays only start at the stored time, so every wait and reset counts from it.
 */
export function lag(stored: number, now: number): number {
  const ahead = stored - now;
  return ahead > 0 ? ahead : 0;
}

/** floorRemaining — whole cost-1 requests that fit in `room`, never negative, forgiving float dust. */
export function floorRemaining(room: number, slack: number): number {
  const r = Math.floor(room + slack);
  return r > 0 ? r : 0;
}
