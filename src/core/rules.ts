import type { Accounting, Algorithm } from './types.js';
import type { RuleConfig } from './algorithms/common.js';
import { RatekeeperError, show } from './errors.js';
import { formatDuration, parseDuration, unitMs, unitProblem, type Duration } from './duration.js';
import { checkOptions, didYouMean } from './options.js';

/** RuleOptions — what every rule takes: "`limit` per `per`". */
export interface RuleOptions {
  /** limit — cost units admitted per `per` (a count of requests when every cost is 1). @example 20 */
  limit: number;
  /** per — the period: `'500ms'`, `'10s'`, `'1m'`, `'1h'`, `'1d'`, or ms. @example '1m' */
  per: Duration;
  /** name — how headers and decisions call the rule. @default `${limit}/${per}`, e.g. `'20/1m'` */
  name?: string;
  /**
   * accounting — whether refused attempts count: `'leaky'` (no) or `'strict'` (yes, as if admitted).
   * @default 'leaky' ('strict' for earrrl)
   */
  accounting?: Accounting;
}

/** BurstOptions — rules with a bucket. */
export interface BurstOptions extends RuleOptions {
  /** burst — cost units a fresh client may send at once (>= 1). @default limit */
  burst?: number;
}

/** EarrrlOptions — the recent-average limiter. */
export interface EarrrlOptions extends RuleOptions {
  /** halfLife — how fast the estimate forgets: after one half-life a past burst weighs half. Required. @example '10s' */
  halfLife: Duration;
}

/**
 * MAX_AMOUNT — the largest limit, burst or cost: 1e15 cost units (the largest Integer a structured header field
 * carries is 999 999 999 999 999, and float state keeps whole units exact up to 2^53 ≈ 9e15).
 * MIN_LIMIT — the smallest limit: 1e-6 cost units per `per` (with `per` at most MAX_DURATION, every rate and
 * interval the algorithms derive stays finite).
 */
export const MAX_AMOUNT = 1e15;
export const MIN_LIMIT = 1e-6;

/** ALGORITHMS — every algorithm name, in the order of the docs. */
export const ALGORITHMS: readonly Algorithm[] = Object.freeze([
  'fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential',
] as const);
const BURSTY = new Set<Algorithm>(['tokenBucket', 'leakyBucket', 'gcra']);
const KNOWN_FIELDS = new Set(['limit', 'per', 'name', 'accounting', 'burst', 'halfLife']);

function build(algorithm: Algorithm, options: unknown): RuleConfig {
  const where = `${algorithm}`;
  if (typeof options !== 'object' || options === null) {
    throw new RatekeeperError(`${where} takes an options object like { limit: 20, per: '1m' }, got ${show(options)}`);
  }
  const o = options as Record<string, unknown>;
  for (const field of Object.keys(o)) {
    if (!KNOWN_FIELDS.has(field) || (field === 'burst' && !BURSTY.has(algorithm)) || (field === 'halfLife' && algorithm !== 'earrrl')) {
      const own = [...KNOWN_FIELDS].filter((f) => (f !== 'burst' || BURSTY.has(algorithm)) && (f !== 'halfLife' || algorithm === 'earrrl'));
      const hint = field === 'burst' ? ' (earrrl and exponential take their burst from limit and per)'
        : field === 'halfLife' ? ' (only earrrl has a half-life)' : didYouMean(field, own);
      throw new RatekeeperError(`${where}.${field} is not an option of ${algorithm}${hint}, got ${show(o[field])}`);
    }
  }
  const limit = o.limit;
  if (typeof limit !== 'number' || !Number.isFinite(limit) || limit <= 0) {
    throw new RatekeeperError(`${where}.limit must be a finite number > 0, got ${show(limit)}`);
  }
  if (limit < MIN_LIMIT || limit > MAX_AMOUNT) {
    throw new RatekeeperError(`${where}.limit must be from ${MIN_LIMIT} to ${MAX_AMOUNT}, got ${show(limit)}`);
  }
  const per = parseDuration(o.per, `${where}.per`);
  let burst = limit;
  if (o.burst !== undefined) {
    if (typeof o.burst !== 'number' || !Number.isFinite(o.burst) || o.burst < 1) {
      throw new RatekeeperError(`${where}.burst must be a finite number >= 1, got ${show(o.burst)}`);
    }
    if (o.burst > MAX_AMOUNT) throw new RatekeeperError(`${where}.burst must be at most ${MAX_AMOUNT}, got ${show(o.burst)}`);
    burst = o.burst;
  }
  let halfLife = 0;
  if (algorithm === 'earrrl') {
    if (o.halfLife === undefined) throw new RatekeeperError(`${where}.halfLife is required, e.g. '10s', got undefined`);
    halfLife = parseDuration(o.halfLife, `${where}.halfLife`);
  }
  const accounting = o.accounting ?? (algorithm === 'earrrl' ? 'strict' : 'leaky');
  if (accounting !== 'leaky' && accounting !== 'strict') {
    throw new RatekeeperError(`${where}.accounting must be 'leaky' or 'strict', got ${show(accounting)}`);
  }
  if (o.name !== undefined && (typeof o.name !== 'string' || o.name.length === 0)) {
    throw new RatekeeperError(`${where}.name must be a non-empty string, got ${show(o.name)}`);
  }
  const name = (o.name as string | undefined) ?? `${limit}/${formatDuration(per)}`;
  return Object.freeze({ algorithm, name, limit, per, burst, halfLife, accounting });
}

/** rules — the rule factories. Each validates its options and throws naming the rule, field and value. */
export const rules = {
  /** fixedWindow — `limit` per epoch-aligned window of `per`. */
  fixedWindow: (o: RuleOptions): RuleConfig => build('fixedWindow', o),
  /** slidingWindow — the sliding window counter: previous window weighted by its overlap + current. */
  slidingWindow: (o: RuleOptions): RuleConfig => build('slidingWindow', o),
  /** slidingLog — exact: at most `limit` in any `per`; all slidingLog rules of a policy share one log. */
  slidingLog: (o: RuleOptions): RuleConfig => build('slidingLog', o),
  /** tokenBucket — refill at limit/per up to `burst`, starting full. */
  tokenBucket: (o: BurstOptions): RuleConfig => build('tokenBucket', o),
  /** leakyBucket — a meter draining at limit/per, up to `burst`; reports `delay` for smooth output. */
  leakyBucket: (o: BurstOptions): RuleConfig => build('leakyBucket', o),
  /** gcra — the generic cell rate algorithm (redis-cell's CL.THROTTLE with max_burst = burst − 1). */
  gcra: (o: BurstOptions): RuleConfig => build('gcra', o),
  /** earrrl — limits on the CEWMA estimate of the recent rate; strict accounting by default. */
  earrrl: (o: EarrrlOptions): RuleConfig => build('earrrl', o),
  /** exponential — Finch's exponential limiter: `per` is the averaging period, `limit` the rate per period and the burst. */
  exponential: (o: RuleOptions): RuleConfig => build('exponential', o),
};

/** ruleOf — builds a rule of a named algorithm (what the parser and the simulator use). */
export function ruleOf(algorithm: Algorithm, options: RuleOptions & { burst?: number; halfLife?: Duration }): RuleConfig {
  if (!ALGORITHMS.includes(algorithm)) {
    throw new RatekeeperError(`algorithm must be one of ${ALGORITHMS.join(', ')}, got ${show(algorithm)}`);
  }
  return build(algorithm, options);
}

/** ParseOptions — how {@link parseRules} builds the rules it reads. */
export interface ParseOptions {
  /** algorithm — the algorithm of every parsed rule. @default 'slidingLog' */
  algorithm?: Algorithm;
  /** halfLife — for earrrl. */
  halfLife?: Duration;
  /** accounting — of every parsed rule. @default the algorithm's ('leaky'; 'strict' for earrrl) */
  accounting?: Accounting;
}

const PARSE_OPTIONS: ReadonlySet<string> = new Set(['algorithm', 'halfLife', 'accounting']);

const ITEM = /^\s*(\d+(?:\.\d+)?)\s*(?:\/|\bper\b)\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$/i;

/**
 * parseRules — limits written as text: `'1/s; 20/min; 200/h; 800/day'`, `'10 per second'`, `'100/5m'`,
 * separated by `;` or `,`. Each becomes a rule of `options.algorithm` (slidingLog by default).
 * A bad string throws with the item and the reason.
 * @example parseRules('1/s; 20/min', { algorithm: 'gcra' })
 */
export function parseRules(text: string, options: ParseOptions = {}): RuleConfig[] {
  if (typeof text !== 'string') throw new RatekeeperError(`parseRules takes a string like '1/s; 20/min', got ${show(text)}`);
  if (typeof options !== 'object' || options === null) throw new RatekeeperError(`parseRules options must be an object like { algorithm: 'gcra' }, got ${show(options)}`);
  checkOptions(options, PARSE_OPTIONS, 'parseRules');
  const algorithm = options.algorithm ?? 'slidingLog';
  const items = text.split(/[;,]/).map((s) => s.trim()).filter((s) => s.length > 0);
  if (items.length === 0) throw new RatekeeperError(`parseRules found no limit in ${show(text)}: write e.g. '1/s; 20/min'`);
  return items.map((item) => {
    const m = ITEM.exec(item);
    if (!m) throw new RatekeeperError(`cannot parse limit ${show(item)}: write it as '<count>/<unit>' or '<count> per <n> <unit>', e.g. '20/min', '100/5m'`);
    const unit = unitMs(m[3]);
    if (unit === undefined) throw new RatekeeperError(`${unitProblem(m[3])} in limit ${show(item)}: use ms, s, m/min, h, d or w`);
    const count = Number(m[1]);
    const per = (m[2] === undefined ? 1 : Number(m[2])) * unit;
    if (!(per > 0)) throw new RatekeeperError(`the period of limit ${show(item)} must be > 0`);
    const o: RuleOptions & { halfLife?: Duration } = { limit: count, per };
    if (options.accounting) o.accounting = options.accounting;
    if (algorithm === 'earrrl') o.halfLife = options.halfLife ?? (undefined as unknown as Duration);
    return ruleOf(algorithm, o);
  });
}
