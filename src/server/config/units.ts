import type { EnvoyUnit } from './types.js';

/** ENVOY_UNITS — the enum of rls.proto by number: `ENVOY_UNITS[5] === 'MONTH'`. */
export const ENVOY_UNITS: readonly EnvoyUnit[] = Object.freeze(['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'] as const);

/**
 * UNIT_MS — the length of each unit in ms, as envoyproxy/ratelimit divides time: a week is 7 days, a month 30 days, a
 * year 365 days, and windows start at multiples of it since the epoch (its `now / divider * divider`).
 */
export const UNIT_MS: Readonly<Record<Exclude<EnvoyUnit, 'UNKNOWN'>, number>> = Object.freeze({
  SECOND: 1000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 7 * 86_400_000,
  MONTH: 30 * 86_400_000,
  YEAR: 365 * 86_400_000,
});

/** unitOf — the unit a config spells in any case (`second`, `Minute`, `HOUR`), or undefined (UNKNOWN is not a unit). */
export function unitOf(name: string): Exclude<EnvoyUnit, 'UNKNOWN'> | undefined {
  const u = name.toUpperCase();
  return u in UNIT_MS ? (u as Exclude<EnvoyUnit, 'UNKNOWN'>) : undefined;
}

/** unitOfRequest — a request override's unit, by enum name or number; undefined for UNKNOWN or anything else. */
export function unitOfRequest(unit: unknown): Exclude<EnvoyUnit, 'UNKNOWN'> | undefined {
  if (typeof unit === 'number') {
    const u = Number.isInteger(unit) ? ENVOY_UNITS[unit] : undefined;
    return u === undefined || u === 'UNKNOWN' ? undefined : u;
  }
  if (typeof unit === 'string') return unit in UNIT_MS ? (unit as Exclude<EnvoyUnit, 'UNKNOWN'>) : undefined;
  return undefined;
}

/** BY_LENGTH — units from the longest to the shortest (YEAR, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND). */
const BY_LENGTH = (Object.keys(UNIT_MS) as Exclude<EnvoyUnit, 'UNKNOWN'>[]).sort((a, b) => UNIT_MS[b] - UNIT_MS[a]);

/**
 * reportOf — how `limit` per `per` ms is reported as RLS's `requests_per_unit` per `unit`: exactly when `per` is one
 * unit; otherwise the same average rate in the largest unit not longer than `per`, rounded down (a report never
 * promises more than the rule gives on average), SECOND for periods under a second. Capped at 2^32 − 1.
 */
export function reportOf(limit: number, per: number): { requestsPerUnit: number; unit: EnvoyUnit } {
  const unit = BY_LENGTH.find((u) => UNIT_MS[u] <= per) ?? 'SECOND';
  const exact = (limit * UNIT_MS[unit]) / per;
  const rounded = Math.round(exact);
  const requestsPerUnit = Math.abs(exact - rounded) < 1e-9 * Math.max(1, exact) ? rounded : Math.floor(exact);
  return { requestsPerUnit: Math.min(requestsPerUnit, 0xffff_ffff), unit };
}
