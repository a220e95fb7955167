/**
 * server/flagValues — the command line's values read one by one: integers, ports (`off` turns a listener off),
 * booleans (ours, and envoyproxy/ratelimit's Go-style ones), set and non-empty strings; a bad one is a
 * ServeUsageError naming the flag or variable (exit code 2).
 */
import { show } from '../core/errors.js';

/** ServeUsageError — bad arguments: exit code 2. */
export class ServeUsageError extends Error {}

/** int — an integer >= `min`, or undefined when absent or empty. */
export function int(value: string | undefined, what: string, min: number): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > 65_535 * 1_000_000) throw new ServeUsageError(`${what} must be an integer >= ${min}, got ${show(value)}`);
  return n;
}

/** port — a port from 0 to 65535, -1 for `off`, or undefined when absent. */
export function port(value: string | undefined, what: string): number | undefined {
  // `off` (or -1, written --port=-1 since a leading dash reads as an option) turns the listener off
  if (value !== undefined && /^(off|none)$/i.test(value.trim())) return -1;
  const n = int(value, what, -1);
  if (n !== undefined && n > 65_535) throw new ServeUsageError(`${what} must be a port from 0 to 65535 (or off for none), got ${show(value)}`);
  return n;
}

/** set — an environment variable's value, or undefined when it is unset or empty (an empty variable means unset). */
export function set(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** nonEmpty — a flag's value, which must not be empty when given. */
export function nonEmpty(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && value.trim() === '') throw new ServeUsageError(`${flag} must not be empty`);
  return value;
}

/** bool — `1`, `true`, `yes` or `on` (any case) is true, anything else false; undefined when absent or empty. */
export function bool(value: string | undefined): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  return /^(1|true|yes|on)$/i.test(value);
}

/** goBool — a boolean as envoyproxy/ratelimit reads one (Go's strconv.ParseBool); anything else is refused. */
export function goBool(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^(1|t|true)$/i.test(value)) return true;
  if (/^(0|f|false)$/i.test(value)) return false;
  throw new ServeUsageError(`${name} must be true or false, got ${show(value)}`);
}
