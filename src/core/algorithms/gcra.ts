import { Rule, measured, REL_SLACK, TIME_SLACK, MOST_SLACK, floorRemaining, type RuleConfig } from './common.js';

/**
 * GcraConstants — a gcra rule's derived numbers, computed once by gcraConstants: the class below keeps them, and the
 * Redis composer writes them into the rule's Lua twin (src/stores/redis/lua/gcra.lua) as literals, so both compare
 * with the same doubles. interval — T = per/limit, ms per cost unit; tolerance — τ = burst·T, ms; slack — tolerance
 * of comparisons, τ·REL_SLACK + TIME_SLACK, ms; tolSlack — τ + slack, ms; slackI — slack/T, cost units.
 */
export type GcraConstants = { interval: number; tolerance: number; slack: number; tolSlack: number; slackI: number };

/** gcraConstants — the derived numbers of a gcra rule (GcraConstants). */
export function gcraConstants(config: RuleConfig): GcraConstants {
  const interval = config.per / config.limit;
  const tolerance = config.burst * interval;
  const slack = tolerance * REL_SLACK + TIME_SLACK;
  return { interval, tolerance, slack, tolSlack: tolerance + slack, slackI: slack / interval };
}

/**
 * Gcra — the generic cell rate algorithm: a single time, the theoretical arrival time (TAT) at which the client
 * would be back to an empty schedule. Each request pushes TAT by cost·T, where T = per/limit is the emission
 * interval; it is admitted while the new TAT is no further than τ = burst·T ahead of now (τ is the delay
 * variation tolerance: how far ahead of its schedule a client may run). A fresh client may send `burst` at once.
 * It answers as redis-cell's CL.THROTTLE with max_burst = burst − 1 (times here in ms, not rounded to seconds).
 * State: [tat — theoretical arrival time, ms].
 */
export class Gcra extends Rule {
  readonly stateSize = 1;
  /** interval — the emission interval T, ms per cost unit. */
  private readonly interval: number;
  /** tolerance — τ = burst·T, ms. */
  private readonly tolerance: number;
  /** slack — tolerance of comparisons, ms. */
  private readonly slack: number;
  /** most — the most `remaining` can be: the whole burst, never what the time slack adds to it at high rates. */
  private readonly most: number;

  constructor(config: RuleConfig) {
    super(config);
    const k = gcraConstants(config);
    this.interval = k.interval;
    this.tolerance = k.tolerance;
    this.slack = k.slack;
    this.most = Math.floor(this.tolerance / this.interval + MOST_SLACK);
  }

  next(s: Float64Array, o: number, now: number, cost: number, n: Float64Array, no: number): boolean {
    const tat = s[o] > now ? s[o] : now;
    const newTat = tat + cost * this.interval;
    n[no] = newTat;
    return newTat - now <= this.tolerance + this.slack;
  }

  report(s: Float64Array, o: number, now: number): void {
    const ahead = s[o] - now;
    const r = floorRemaining((this.tolerance - (ahead > 0 ? ahead : 0)) / this.interval, this.slack / this.interval);
    measured.remaining = r < this.most ? r : this.most;
    measured.resetAfter = ahead > 0 ? ahead : 0;
  }

  wait(s: Float64Array, o: number, now: number, cost: number): number {
    const increment = cost * this.interval;
    const tat = s[o] > now ? s[o] : now;
    const over = tat + increment - this.tolerance - now;
    if (over <= this.slack) return 0;
    if (increment > this.tolerance + this.slack) return Infinity;
    return over;
  }

  /**
   * adopt — the one algorithm whose stored number depends on the rate: TAT − now is used × T_old (the cost units the
   * client is ahead of its schedule, in time), so it becomes used × T_new: the same used amount judged by the new
   * interval and tolerance (2 used of 2/min → 98 left of 100/min; 50 used of 100/min → refused under 2/min until
   * the new schedule has drained 49 of them, about 24.5 min). A TAT not ahead of `now` is a fresh client's either way.
   */
  override adopt(from: RuleConfig, s: Float64Array, o: number, now: number): void {
    const ahead = s[o] - now;
    if (!(ahead > 0)) return;
    s[o] = now + (ahead / (from.per / from.limit)) * this.interval;
  }

  /** refund — TAT moves back by cost·T, never behind `now` (a fresh client's schedule). */
  refund(s: Float64Array, o: number, now: number, cost: number): void {
    const tat = s[o];
    if (!(tat > now)) return;
    const back = tat - cost * this.interval;
    s[o] = back > now ? back : now;
  }
}
