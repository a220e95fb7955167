/**
 * rls — Envoy's rate limit service messages (RLS v3) as plain objects, in the field names of the proto
 * (proto/rls.proto, loaded with keepCase), and their proto3 JSON mapping for `POST /json`. The units and the caps are
 * Envoy's vocabulary (envoy.ts).
 */

import { MAX_AMOUNT } from '../core/rules.js';
import { ENVOY_UNITS, MAX_DESCRIPTORS, MAX_ENTRIES, MAX_UINT32, type EnvoyUnit, type RlsCode } from './envoy.js';


export interface RlsEntry { key: string; value: string }

export interface RlsDescriptor {
  entries?: RlsEntry[];
  /** limit — the request's own limit for this descriptor, replacing the configured one. */
  limit?: { requests_per_unit?: number; unit?: EnvoyUnit | number } | null;
  /** hits_addend — google.protobuf.UInt64Value: what this descriptor's hit costs, as is when set (0: looked at, not charged); unset: the request's. */
  hits_addend?: { value?: number | string } | null;
}

export interface RlsRequest {
  domain?: string;
  descriptors?: RlsDescriptor[];
  /** hits_addend — what every descriptor's hit costs (0 or unset: 1). */
  hits_addend?: number;
}

export interface RlsRateLimit { name?: string; requests_per_unit: number; unit: EnvoyUnit }

export interface RlsStatus {
  code: RlsCode;
  current_limit?: RlsRateLimit;
  limit_remaining: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface RlsHeader { key: string; value: string }

export interface RlsResponse {
  overall_code: RlsCode;
  statuses: RlsStatus[];
  response_headers_to_add: RlsHeader[];
}

/**
 * wellFormed — `s` has no lone surrogate (String.prototype.isWellFormed, Node 20; not in the ES2022 lib types).
 * A lone surrogate has no UTF-8 form: Redis would store it as U+FFFD's bytes, so distinct keys would share a counter.
 */
export function wellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** checkDescriptorCount — refuses a request of more than MAX_DESCRIPTORS descriptors, before any work on them. */
export function checkDescriptorCount(n: number): void {
  if (n > MAX_DESCRIPTORS) throw new BadRequest('descriptors', `has ${n} descriptors; at most ${MAX_DESCRIPTORS} are accepted in one request`);
}

/** BadRequest — a request the service cannot decide: gRPC INVALID_ARGUMENT, HTTP 400; `field` names what is wrong. */
export class BadRequest extends Error {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'BadRequest';
  }
}

/** duration — ms as a google.protobuf.Duration (whole ms; never negative). */
export function duration(ms: number): { seconds: number; nanos: number } {
  const t = ms > 0 ? Math.ceil(ms) : 0;
  const seconds = Math.floor(t / 1000);
  return { seconds, nanos: (t - seconds * 1000) * 1_000_000 };
}

// ---- proto3 JSON (what envoyproxy/ratelimit's /json reads and writes with protojson) ----

/** pick — a field by its JSON name or its proto name (protojson accepts both). */
function pick(o: Record<string, unknown>, json: string, proto: string): unknown {
  return o[json] !== undefined ? o[json] : o[proto];
}

/** PREVIEW — the most characters of a client's string quoted back in an error message. */
const PREVIEW = 80;

/**
 * preview — a client's JSON value as an error message shows it, in bounded time and size and without recursion: a
 * string quoted (cut at PREVIEW characters, the cut marked `…`), a number, boolean or null as written, an array or an
 * object by its kind and size. (JSON.stringify of a body nested 200 000 deep throws a RangeError, and of a 4 MB one
 * copies it only to be cut.)
 */
export function preview(v: unknown): string {
  if (typeof v === 'string') return v.length <= PREVIEW ? JSON.stringify(v) : `${JSON.stringify(v.slice(0, PREVIEW))}… (${v.length} characters)`;
  if (v === null || typeof v === 'number' || typeof v === 'boolean' || v === undefined) return String(v);
  if (Array.isArray(v)) return `an array of ${v.length} item${v.length === 1 ? '' : 's'}`;
  if (typeof v === 'object') return 'an object';
  return typeof v;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown, field: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new BadRequest(field, `must be a string, got ${preview(v)}`);
  return v;
}

/** uint — a proto3 JSON unsigned integer: a number or a decimal string. */
function uint(v: unknown, field: string, max: number): number {
  if (v === undefined || v === null) return 0;
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max) {
    throw new BadRequest(field, `must be an integer from 0 to ${max}, got ${preview(v)}`);
  }
  return n;
}

function unit(v: unknown, field: string): EnvoyUnit {
  if (v === undefined || v === null) return 'UNKNOWN';
  if (typeof v === 'number' && ENVOY_UNITS[v] !== undefined) return ENVOY_UNITS[v];
  if (typeof v === 'string' && (ENVOY_UNITS as readonly string[]).includes(v)) return v as EnvoyUnit;
  throw new BadRequest(field, `must be one of ${ENVOY_UNITS.join(', ')}, got ${preview(v)}`);
}

/** REQUEST_FIELDS, DESCRIPTOR_FIELDS — the JSON names (and proto names) of the messages' fields. */
const REQUEST_FIELDS: ReadonlySet<string> = new Set(['domain', 'descriptors', 'hitsAddend', 'hits_addend']);
const DESCRIPTOR_FIELDS: ReadonlySet<string> = new Set(['entries', 'limit', 'hitsAddend', 'hits_addend']);
const LIMIT_FIELDS: ReadonlySet<string> = new Set(['requestsPerUnit', 'requests_per_unit', 'unit']);

/** NOT_WELL_FORMED — why a string with a lone surrogate (`"\ud800"` in JSON) is refused. */
const NOT_WELL_FORMED = 'has a lone surrogate: it is not a Unicode string (distinct keys would share one counter)';

/** atOf — the path of descriptor `i` in an error message. */
function atOf(i: number): string {
  return `descriptors[${i}]`;
}

/** requestFromJson — a RateLimitRequest from its proto3 JSON form (camelCase or proto field names). */
export function requestFromJson(body: unknown): RlsRequest {
  if (!isObject(body)) throw new BadRequest('body', `must be a JSON object (a RateLimitRequest), got ${preview(body)}`);
  for (const k in body) if (!REQUEST_FIELDS.has(k)) throw new BadRequest(k, 'is not a field of RateLimitRequest');
  const domain = str(body.domain, 'domain');
  if (!wellFormed(domain)) throw new BadRequest('domain', NOT_WELL_FORMED);
  const raw = body.descriptors ?? [];
  if (!Array.isArray(raw)) throw new BadRequest('descriptors', 'must be an array');
  checkDescriptorCount(raw.length);
  // loops rather than map, and a descriptor's path (`descriptors[i]`) made only for an error message: no string or
  // closure per descriptor or entry on the common path
  const descriptors = new Array<RlsDescriptor>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const d: unknown = raw[i];
    if (!isObject(d)) throw new BadRequest(atOf(i), 'must be an object');
    for (const k in d) if (!DESCRIPTOR_FIELDS.has(k)) throw new BadRequest(`${atOf(i)}.${k}`, 'is not a field of RateLimitDescriptor');
    const es = d.entries ?? [];
    if (!Array.isArray(es)) throw new BadRequest(`${atOf(i)}.entries`, 'must be an array');
    if (es.length > MAX_ENTRIES) throw new BadRequest(`${atOf(i)}.entries`, `has ${es.length} entries; at most ${MAX_ENTRIES} are accepted in one descriptor`);
    const entries = new Array<RlsEntry>(es.length);
    for (let j = 0; j < es.length; j++) {
      const e: unknown = es[j];
      if (!isObject(e)) throw new BadRequest(`${atOf(i)}.entries[${j}]`, 'must be an object { key, value }');
      for (const k in e) if (k !== 'key' && k !== 'value') throw new BadRequest(`${atOf(i)}.entries[${j}].${k}`, 'is not a field of RateLimitDescriptor.Entry { key, value }');
      // the common case (two strings) builds no field path; str() names it when one is wrong
      const key = typeof e.key === 'string' ? e.key : str(e.key, `${atOf(i)}.entries[${j}].key`);
      const value = typeof e.value === 'string' ? e.value : str(e.value, `${atOf(i)}.entries[${j}].value`);
      if (!wellFormed(key)) throw new BadRequest(`${atOf(i)}.entries[${j}].key`, NOT_WELL_FORMED);
      if (!wellFormed(value)) throw new BadRequest(`${atOf(i)}.entries[${j}].value`, NOT_WELL_FORMED);
      entries[j] = { key, value };
    }
    const out: RlsDescriptor = { entries };
    if (d.limit !== undefined && d.limit !== null) {
      const at = atOf(i);
      if (!isObject(d.limit)) throw new BadRequest(`${at}.limit`, 'must be an object { requestsPerUnit, unit }');
      for (const k in d.limit) if (!LIMIT_FIELDS.has(k)) throw new BadRequest(`${at}.limit.${k}`, 'is not a field of RateLimitOverride { requestsPerUnit, unit }');
      out.limit = {
        requests_per_unit: uint(pick(d.limit, 'requestsPerUnit', 'requests_per_unit'), `${at}.limit.requestsPerUnit`, MAX_UINT32),
        unit: unit(d.limit.unit, `${at}.limit.unit`),
      };
    }
    const h = pick(d, 'hitsAddend', 'hits_addend');
    // google.protobuf.UInt64Value's JSON form is the bare number (or string); an object { value } is accepted too
    if (h !== undefined && h !== null) out.hits_addend = { value: uint(isObject(h) ? h.value : h, `${atOf(i)}.hitsAddend`, MAX_AMOUNT) };
    descriptors[i] = out;
  }
  return { domain, descriptors, hits_addend: uint(pick(body, 'hitsAddend', 'hits_addend'), 'hitsAddend', MAX_UINT32) };
}

/**
 * durationJson — a Duration's proto3 JSON: seconds with up to 9 fractional digits and an `s`. The fraction's trailing
 * zeros are divided off rather than cut by a regex (a replace per status of every /json answer); nanos outside
 * 1..999 999 999 or not whole keep the general form.
 */
export function durationJson(d: { seconds: number; nanos: number }): string {
  const nanos = d.nanos;
  if (nanos === 0) return `${d.seconds}s`;
  // whole ms (what duration() makes of a decision's ms): the fraction's text from a table
  if (nanos > 0 && nanos < 1_000_000_000 && nanos % 1_000_000 === 0) return `${d.seconds}${MS_FRACTION[nanos / 1_000_000]}s`;
  if (!Number.isInteger(nanos) || nanos < 0 || nanos > 999_999_999) return `${d.seconds}.${String(nanos).padStart(9, '0').replace(/0+$/, '')}s`;
  let n = nanos;
  let digits = 9;
  while (n % 10 === 0) {
    n /= 10;
    digits--;
  }
  return `${d.seconds}.${FRACTION_ZEROS[digits - String(n).length]}${n}s`;
}

/** FRACTION_ZEROS — the leading zeros of a fraction of 9 digits: FRACTION_ZEROS[k] is k zeros. */
const FRACTION_ZEROS = ['', '0', '00', '000', '0000', '00000', '000000', '0000000', '00000000'];

/** MS_FRACTION — MS_FRACTION[ms] (1 … 999) is the fraction of a second of `ms` whole milliseconds: `.001`, `.12`, `.5`. */
const MS_FRACTION = Array.from({ length: 1000 }, (_, ms) => `.${String(ms).padStart(3, '0')}`.replace(/0+$/, ''));

/** responseToJson — a RateLimitResponse in proto3 JSON as protojson writes it (default values left out). */
export function responseToJson(r: RlsResponse): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.overall_code !== 'UNKNOWN') out.overallCode = r.overall_code;
  if (r.statuses.length > 0) {
    out.statuses = r.statuses.map((s) => {
      const o: Record<string, unknown> = {};
      if (s.code !== 'UNKNOWN') o.code = s.code;
      if (s.current_limit !== undefined) {
        const l: Record<string, unknown> = {};
        if (s.current_limit.name) l.name = s.current_limit.name;
        if (s.current_limit.requests_per_unit) l.requestsPerUnit = s.current_limit.requests_per_unit;
        if (s.current_limit.unit !== 'UNKNOWN') l.unit = s.current_limit.unit;
        o.currentLimit = l;
      }
      if (s.limit_remaining) o.limitRemaining = s.limit_remaining;
      if (s.duration_until_reset !== undefined) o.durationUntilReset = durationJson(s.duration_until_reset);
      return o;
    });
  }
  if (r.response_headers_to_add.length > 0) out.responseHeadersToAdd = r.response_headers_to_add.map((h) => ({ key: h.key, value: h.value }));
  return out;
}

/** limitJson — a RateLimit's proto3 JSON (responseToJson's `currentLimit`), written by hand. */
function limitJson(l: RlsRateLimit): string {
  let c = l.name ? `{"name":${JSON.stringify(l.name)}` : '{';
  if (l.requests_per_unit) c += `${c.length > 1 ? ',' : ''}"requestsPerUnit":${l.requests_per_unit}`;
  if (l.unit !== 'UNKNOWN') c += `${c.length > 1 ? ',' : ''}"unit":"${l.unit}"`;
  return `${c}}`;
}

/**
 * LimitText — a remembered limit's JSON (`limit`), and the text of a status of it up to its `currentLimit`, by the
 * status's code: what responseJson writes of every status of the limit before its remaining and duration.
 */
interface LimitText {
  limit: string;
  ok: string;
  over: string;
  unknown: string;
}

/**
 * LIMIT_TEXT — the JSON of the frozen current_limit objects the service shares between its answers (rememberLimit),
 * written once each; any other RateLimit (one a caller built, which it may change) is written afresh every time.
 */
const LIMIT_TEXT = new WeakMap<RlsRateLimit, LimitText>();

/** rememberLimit — `l` frozen, its JSON kept for responseJson (a limit's current_limit, built once: plan.ts). */
export function rememberLimit(l: RlsRateLimit): RlsRateLimit {
  Object.freeze(l);
  const limit = limitJson(l);
  LIMIT_TEXT.set(l, { limit, ok: `{"code":"OK","currentLimit":${limit}`, over: `{"code":"OVER_LIMIT","currentLimit":${limit}`, unknown: `{"currentLimit":${limit}` });
  return l;
}

/** statusHead — a status's text up to its currentLimit, when its limit is remembered and its code one of the three. */
function statusHead(x: RlsStatus, l: RlsRateLimit): string | undefined {
  const t = LIMIT_TEXT.get(l);
  if (t === undefined) return undefined;
  return x.code === 'OK' ? t.ok : x.code === 'OVER_LIMIT' ? t.over : x.code === 'UNKNOWN' ? t.unknown : undefined;
}

/**
 * responseJson — JSON.stringify(responseToJson(r)), byte for byte, written without the intermediate objects (the
 * /json answer of every call: half the time). A test holds the two to the same bytes (test/server/speed.test.ts).
 */
export function responseJson(r: RlsResponse): string {
  let s = r.overall_code !== 'UNKNOWN' ? `{"overallCode":"${r.overall_code}"` : '{';
  const st = r.statuses;
  if (st.length > 0) {
    s += s.length > 1 ? ',"statuses":[' : '"statuses":[';
    for (let i = 0; i < st.length; i++) {
      if (i > 0) s += ',';
      const x = st[i];
      if (x === undefined) {
        s += 'null';
        continue;
      }
      const l = x.current_limit;
      let o = l === undefined ? undefined : statusHead(x, l);
      if (o === undefined) {
        o = x.code !== 'UNKNOWN' ? `{"code":"${x.code}"` : '{';
        if (l !== undefined) o += `${o.length > 1 ? ',' : ''}"currentLimit":${LIMIT_TEXT.get(l)?.limit ?? limitJson(l)}`;
      }
      if (x.limit_remaining) o += `${o.length > 1 ? ',' : ''}"limitRemaining":${x.limit_remaining}`;
      if (x.duration_until_reset !== undefined) o += `${o.length > 1 ? ',' : ''}"durationUntilReset":"${durationJson(x.duration_until_reset)}"`;
      s += `${o}}`;
    }
    s += ']';
  }
  const h = r.response_headers_to_add;
  if (h.length > 0) {
    s += s.length > 1 ? ',"responseHeadersToAdd":[' : '"responseHeadersToAdd":[';
    for (let i = 0; i < h.length; i++) s += `${i > 0 ? ',' : ''}{"key":${JSON.stringify(h[i].key)},"value":${JSON.stringify(h[i].value)}}`;
    s += ']';
  }
  return `${s}}`;
}
