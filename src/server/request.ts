/**
 * request — the one normaliser of an RLS request, whichever transport decoded it (`/json`'s requestFromJson, gRPC's
 * protobuf): the domain and descriptors present, at most MAX_DESCRIPTORS, each descriptor's key under the store's
 * cap, its cost (hits_addend, as envoyproxy/ratelimit's GetHitsAddends) and its own limit (a known unit, a uint32) —
 * all checked before anything is matched or charged, each refusal a BadRequest naming the field.
 */
import { MAX_KEY_LENGTH } from '../limiter.js';
import { MAX_AMOUNT } from '../core/rules.js';
import type { RequestOverride } from './config/types.js';
import { ENVOY_UNITS, MAX_UINT32, UNIT_MS } from './envoy.js';
import { BadRequest, checkDescriptorCount, preview, type RlsDescriptor, type RlsEntry, type RlsRequest } from './rls.js';

/**
 * NormalRequest — a request as the decision reads it. One instance is reused (a request is planned synchronously,
 * start to end): valid until the next {@link normalise}.
 */
export interface NormalRequest {
  domain: string;
  descriptors: readonly RlsDescriptor[];
  /** costs — descriptor i's hits: its own hits_addend when set (0 too), else the request's (0 or unset: 1). */
  costs: number[];
  /** overrides — descriptor i's own limit (its `limit`), or undefined. */
  overrides: (RequestOverride | undefined)[];
}

const NO_ENTRIES: readonly RlsEntry[] = [];
const scratch: NormalRequest = { domain: '', descriptors: [], costs: [], overrides: [] };

/** normalise — `req` checked whole and read into the scratch NormalRequest. Throws BadRequest naming the field. */
export function normalise(req: RlsRequest): NormalRequest {
  const domain = req.domain ?? '';
  if (domain === '') throw new BadRequest('domain', 'must not be empty');
  const descriptors = req.descriptors ?? [];
  if (descriptors.length === 0) throw new BadRequest('descriptors', 'must not be empty');
  checkDescriptorCount(descriptors.length);
  const base = req.hits_addend !== undefined && req.hits_addend > 0 ? req.hits_addend : 1;
  const out = scratch;
  const costs = out.costs;
  const overrides = out.overrides;
  costs.length = descriptors.length;
  overrides.length = descriptors.length;
  for (let i = 0; i < descriptors.length; i++) {
    const d = descriptors[i];
    // the key cap before any matching: a 3 MB value was walked against every wildcard of its key first
    const least = leastKeyLength(domain, d.entries ?? NO_ENTRIES);
    if (least > MAX_KEY_LENGTH) throw keyTooLong(i, least);
    costs[i] = hits(d, base, i);
    overrides[i] = d.limit !== undefined && d.limit !== null ? overrideOf(d, i) : undefined;
  }
  out.domain = domain;
  out.descriptors = descriptors;
  return out;
}

/**
 * leastKeyLength — the fewest characters the store key of a descriptor can have: the domain, `:`, and every entry's
 * key, `=` and value, joined by `&` — the key (config/key.ts descriptorKey) before its escapes, which only lengthen
 * it. So a descriptor past MAX_KEY_LENGTH here would make a key past it too, and is refused before it is matched,
 * while every key under the cap passes as before. The cap bounds the sum of a descriptor's entries (with the domain),
 * not each entry alone.
 */
function leastKeyLength(domain: string, entries: readonly RlsEntry[]): number {
  let n = domain.length + 2 * entries.length;
  for (let j = 0; j < entries.length; j++) n += entries[j].key.length + entries[j].value.length;
  return n;
}

/** keyTooLong — the BadRequest of descriptor `i` whose key would have `n` characters (before escapes, when counted before matching). */
export function keyTooLong(i: number, n: number): BadRequest {
  return new BadRequest(`descriptors[${i}].entries`, `make a key of ${n} characters; at most ${MAX_KEY_LENGTH} are accepted (the domain and every entry's key and value)`);
}

/**
 * hits — a descriptor's cost, as envoyproxy/ratelimit's GetHitsAddends: its own hits_addend as is when set — 0 too,
 * "check without charging" — else the request's (`base`: 0 or unset there means 1). A google.protobuf.UInt64Value
 * set to 0 is sent as an empty message, which proto-loader decodes as `{}` (no `value`): set, and 0.
 */
function hits(d: RlsDescriptor, base: number, i: number): number {
  const h = d.hits_addend;
  if (h === undefined || h === null) return base;
  const v = typeof h.value === 'string' ? Number(h.value) : h.value ?? 0;
  if (!Number.isSafeInteger(v) || v < 0 || v > MAX_AMOUNT) throw new BadRequest(`descriptors[${i}].hits_addend`, `must be an integer from 0 to ${MAX_AMOUNT}, got ${preview(h.value)}`);
  return v;
}

/** overrideOf — a descriptor's own limit as the config's matcher takes it: a uint32 per a known unit, by name. */
function overrideOf(d: RlsDescriptor, i: number): RequestOverride {
  const o = d.limit!;
  const rpu = o.requests_per_unit ?? 0;
  if (!Number.isInteger(rpu) || rpu < 0 || rpu > MAX_UINT32) throw new BadRequest(`descriptors[${i}].limit.requests_per_unit`, `must be an integer from 0 to ${MAX_UINT32}, got ${rpu}`);
  // a known unit arrives by name (proto-loader's enums: String); a number here is one the proto does not know
  const unit = typeof o.unit === 'number' ? ENVOY_UNITS[o.unit] : o.unit;
  if (unit === undefined || !Object.hasOwn(UNIT_MS, unit)) {
    throw new BadRequest(`descriptors[${i}].limit.unit`, `must be a known unit (SECOND … YEAR, WEEK), got ${JSON.stringify(o.unit ?? 'UNKNOWN')}`);
  }
  return { requestsPerUnit: rpu, unit };
}
