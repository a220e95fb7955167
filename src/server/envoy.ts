/**
 * envoy — Envoy's rate limit vocabulary, in one place: the codes and units of rls.proto (their names, enum numbers,
 * and the units' lengths in ms, as envoyproxy/ratelimit divides time), how a rule is reported as `requests_per_unit` per `unit`, and the
 * caps on what one request may ask (descriptors, entries, request-supplied limits). Imports nothing of the service:
 * the config, the messages, the wire codecs and the decision all read it.
 */

/** EnvoyUnit — `RateLimitResponse.RateLimit.Unit` of rls.proto, in the order of its enum numbers (UNKNOWN = 0 … WEEK = 7). */
export type EnvoyUnit = 'UNKNOWN' | 'SECOND' | 'MINUTE' | 'HOUR' | 'DAY' | 'MONTH' | 'YEAR' | 'WEEK';

/** RlsCode — `RateLimitResponse.Code` of rls.proto: a descriptor's or the request's verdict (UNKNOWN = 0, OK, OVER_LIMIT). */
export type RlsCode = 'UNKNOWN' | 'OK' | 'OVER_LIMIT';

/** CODE_NUMBER — each code's enum number, in a prototype-less record (`constructor` is no code): what the encoder writes. */
export const CODE_NUMBER: Readonly<Record<RlsCode, number>> = Object.freeze(
  Object.assign(Object.create(null) as Record<RlsCode, number>, { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 }),
);

/** KnownUnit — a unit that has a length (every one but UNKNOWN). */
export type KnownUnit = Exclude<EnvoyUnit, 'UNKNOWN'>;

/** ENVOY_UNITS — the enum of rls.proto by number: `ENVOY_UNITS[5] === 'MONTH'`. */
export const ENVOY_UNITS: readonly EnvoyUnit[] = Object.freeze(['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'] as const);

/** UNIT_NUMBER — each unit's enum number (the inverse of ENVOY_UNITS), in a prototype-less record: what the encoder writes. */
export const UNIT_NUMBER: Readonly<Record<EnvoyUnit, number>> = Object.freeze(
  Object.assign(Object.create(null) as Record<EnvoyUnit, number>, { UNKNOWN: 0, SECOND: 1, MINUTE: 2, HOUR: 3, DAY: 4, MONTH: 5, YEAR: 6, WEEK: 7 }),
);

/**
 * UNIT_MS — the length of each unit in ms, as envoyproxy/ratelimit divides time: a week is 7 days, a month 30 days, a
 * year 365 days, and windows start at multiples of it since the epoch (its `now / divider * divider`).
 */
export const UNIT_MS: Readonly<Record<KnownUnit, number>> = Object.freeze({
  SECOND: 1000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
  WEEK: 7 * 86_400_000,
  MONTH: 30 * 86_400_000,
  YEAR: 365 * 86_400_000,
});

/** unitOf — the unit a config spells in any case (`second`, `Minute`, `HOUR`), or undefined (UNKNOWN is not a unit). */
export function unitOf(name: string): KnownUnit | undefined {
  const u = name.toUpperCase();
  return Object.hasOwn(UNIT_MS, u) ? (u as KnownUnit) : undefined;
}

/** unitOfRequest — a request's unit, by enum name or number; undefined for UNKNOWN or anything else. */
export function unitOfRequest(unit: unknown): KnownUnit | undefined {
  if (typeof unit === 'number') {
    const u = Number.isInteger(unit) ? ENVOY_UNITS[unit] : undefined;
    return u === undefined || u === 'UNKNOWN' ? undefined : u;
  }
  if (typeof unit === 'string') return Object.hasOwn(UNIT_MS, unit) ? (unit as KnownUnit) : undefined;
  return undefined;
}

/** windowLeft — ms from `now` (ms) to the end of the current window of `unit` (a fixed window's reset); 0 for UNKNOWN. */
export function windowLeft(unit: EnvoyUnit | undefined, now: number): number {
  if (unit === undefined || unit === 'UNKNOWN') return 0;
  const per = UNIT_MS[unit];
  return per - (now % per);
}

/** BY_LENGTH — units from the longest to the shortest (YEAR, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND). */
const BY_LENGTH = (Object.keys(UNIT_MS) as KnownUnit[]).sort((a, b) => UNIT_MS[b] - UNIT_MS[a]);

/**
 * rateReport — how `limit` per `per` ms is reported as RLS's `requests_per_unit` per `unit`: exactly when `per` is one
 * unit; otherwise the same average rate in the largest unit not longer than `per`, rounded down (a report never
 * promises more than the rule gives on average), SECOND for periods under a second. Capped at MAX_UINT32.
 */
export function rateReport(limit: number, per: number): { requestsPerUnit: number; unit: EnvoyUnit } {
  const unit = BY_LENGTH.find((u) => UNIT_MS[u] <= per) ?? 'SECOND';
  const exact = (limit * UNIT_MS[unit]) / per;
  const rounded = Math.round(exact);
  const requestsPerUnit = Math.abs(exact - rounded) < 1e-9 * Math.max(1, exact) ? rounded : Math.floor(exact);
  return { requestsPerUnit: Math.min(requestsPerUnit, MAX_UINT32), unit };
}

/** MAX_UINT32 — the largest uint32: `requests_per_unit`, `limit_remaining` (an unlimited limit's remaining). */
export const MAX_UINT32 = 0xffff_ffff;

/** NEAR_LIMIT_RATIO — envoy's: a hit past this share of the limit (less than 20 % left) counts as near the limit in the metrics. */
export const NEAR_LIMIT_RATIO = 0.8;

/**
 * MAX_DESCRIPTORS — the most descriptors one request may have. A request is decided in one synchronous pass on the
 * memory store: 100 000 descriptors (4 MB of JSON) held the event loop, and so every other client, for seconds.
 * Envoy sends one descriptor per rate limit action of a route: a few.
 */
export const MAX_DESCRIPTORS = 1000;

/**
 * MAX_ENTRIES — the most entries one descriptor may have. Envoy writes one entry per action of a rate limit: a few.
 * A descriptor deeper than any configured path matches nothing anyway; the bound keeps its decoding cheap.
 */
export const MAX_ENTRIES = 64;

/**
 * MAX_OVERRIDES — distinct request-supplied limits (descriptor.limit: one per domain, requests_per_unit and unit)
 * kept as limiters at once. Past it, one not in use makes room; when every one is in use, a new one is refused
 * (INVALID_ARGUMENT / 400 naming descriptors[i].limit) — never evicted, so no client of an override in use is
 * forgiven. Each is a table of the store bounded by its maxKeys: at most MAX_OVERRIDES × maxKeys clients in all.
 */
export const MAX_OVERRIDES = 256;

/**
 * OVERRIDE_SPECS — the most request-supplied limits the configuration keeps described (as LimitSpecs, cleared when
 * full): a cache in front of the MAX_OVERRIDES limiters, four times as large so that a spec in use is rarely rebuilt.
 * Bounds memory only; MAX_OVERRIDES is the budget a request meets.
 */
export const OVERRIDE_SPECS = 4 * MAX_OVERRIDES;
