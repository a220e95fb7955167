import { RatekeeperError, show } from './errors.js';

/** Duration — milliseconds as a number, or a string such as `'500ms'`, `'10s'`, `'1.5m'`, `'1h'`, `'1d'`, `'1w'`. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = {
  ms: 1, millisecond: 1, milliseconds: 1,
  s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
  m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
  h: 3_600_000, hr: 3_600_000, hrs: 3_600_000, hour: 3_600_000, hours: 3_600_000,
  d: 86_400_000, day: 86_400_000, days: 86_400_000,
  w: 604_800_000, week: 604_800_000, weeks: 604_800_000,
};

/**
 * MAX_DURATION — the longest duration accepted anywhere (a rule's `per` or `halfLife`, a block's or exemption's
 * `for`): 1e12 ms, about 31.7 years. Beyond it times and expiries lose their precision or overflow what a store can
 * set (Redis PX); a block without end is written without `for`.
 */
export const MAX_DURATION = 1e12;

/**
 * MAX_TIME — the latest time accepted as a request's `now`: 1e15 ms since the epoch (the year 33658). Times are
 * ms since the epoch, finite and >= 0; an epoch time in ms keeps a resolution of 0.125 ms up to here.
 */
export const MAX_TIME = 1e15;

const DURATION = /^\s*(\d+(?:\.\d+)?|\.\d+)?\s*([a-z]+)\s*$/i;

/**
 * unitMs — the length of a unit name (`'s'`, `'min'`, `'day'` …) in ms, or undefined when it is not one.
 * Names are case-insensitive (`'10S'`, `'1 Hour'`), except that a capital M alone or before `s` is refused: in
 * common notations `M` is a month (ISO 8601's `P1M`) or mega (`Ms` a megasecond), so `'10/M'` is not taken to be
 * ten a minute. Minutes are `m`, `min` or `minute(s)` in any case but that one.
 */
export function unitMs(unit: string): number | undefined {
  if (ambiguous(unit)) return undefined;
  return UNIT_MS[unit.toLowerCase()];
}

/** ambiguous — `'M'`, `'MS'`, `'Ms'`: a capital M that reads as month or mega as easily as minute or milli. */
function ambiguous(unit: string): boolean {
  return unit.charCodeAt(0) === 77 /* M */ && (unit.length === 1 || (unit.length === 2 && (unit[1] === 's' || unit[1] === 'S')));
}

const CALENDAR = new Set(['mo', 'mos', 'mon', 'mons', 'month', 'months', 'y', 'yr', 'yrs', 'year', 'years']);

/** unitProblem — why `unit` is not a unit, for an error message: ambiguous, a calendar unit, or unknown. */
export function unitProblem(unit: string): string {
  if (ambiguous(unit)) {
    return `ambiguous time unit ${show(unit)} (a capital M reads as month or mega): write ${unit.length === 1 ? "'m' or 'min' for minutes" : "'ms' for milliseconds"}`;
  }
  if (CALENDAR.has(unit.toLowerCase())) return `time unit ${show(unit)} has no fixed length: write days or weeks ('30d', '52w')`;
  return `unknown time unit ${show(unit)}`;
}

/**
 * parseDuration — a {@link Duration} in ms. A bare unit (`'s'`, `'day'`) means one of it.
 * Throws, naming `what` and the value, for anything that is not a finite duration > 0.
 */
export function parseDuration(value: unknown, what: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const m = DURATION.exec(value);
    const unit = m ? unitMs(m[2]) : undefined;
    if (!m || unit === undefined) {
      const why = m && (ambiguous(m[2]) || CALENDAR.has(m[2].toLowerCase())) ? `: ${unitProblem(m[2])}` : '';
      throw new RatekeeperError(`${what} must be a duration like '500ms', '10s', '1m', '1h', '1d' or a number of ms, got ${show(value)}${why}`);
    }
    ms = (m[1] === undefined ? 1 : Number(m[1])) * unit;
  } else {
    throw new RatekeeperError(`${what} must be a duration like '10s' or a number of ms, got ${show(value)}`);
  }
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new RatekeeperError(`${what} must be a finite duration > 0, got ${show(value)}`);
  }
  if (ms > MAX_DURATION) {
    throw new RatekeeperError(`${what} must be at most ${MAX_DURATION} ms (about 31 years), got ${show(value)}`);
  }
  return ms;
}

/** formatDuration — the shortest exact form of `ms`: 60000 → `'1m'`, 1500 → `'1500ms'`, 90000 → `'90s'`. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
