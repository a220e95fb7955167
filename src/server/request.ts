/**
 * request — the one normaliser of an RLS request, whichever transport decoded it (`/json`'s requestFromJson, gRPC's
 * protobuf): the domain and descriptors present, at most MAX_DESCRIPTORS, each descriptor's key under the store's
 * cap, its cost (hits_addend, as envoyproxy/ratelimit's GetHitsAddends) and its own limit (a known unit, a uint32) —
 * each checked before its descriptor is matched (plan.ts calls these per descriptor, in one pass: no second walk and
 * no array per request), each refusal a BadRequest naming the field.
 */
import { MAX_KEY_LENGTH } from '../limiter.js';
import { MAX_AMOUNT } from '../core/rules.js';
import type { RequestOverride } from './config/types.js';
import { ENVOY_UNITS, MAX_UINT32, UNIT_MS } from './envoy.js';
import { BadRequest, checkDescriptorCount, preview, type RlsDescriptor, type RlsEntry, type RlsRequest } from './rls.js';

/**
 * requestDescriptors — the request's descriptors, once its domain and their number are checked; `domain` is then
 * `req.domain`. Refuses an empty domain, no descriptors, more than MAX_DESCRIPTORS.
 */
export function requestDescriptors(req: RlsRequest): readonly RlsDescriptor[] {
  const domain = req.domain ?? '';
  if (domain === '') throw new BadRequest('domain', 'must not be empty');
  const descriptors = req.descriptors ?? [];
  if (descriptors.length === 0) throw new BadRequest('descriptors', 'must not be empty');
  checkDescriptorCount(descriptors.length);
  return descriptors;
}

/** requestCost — what each descriptor without its own hits_addend costs: the request's hits_addend, 0 or unset meaning 1. */
export function requestCost(req: RlsRequest): number {
  return req.hits_addend !== undefined && req.hits_addend > 0 ? req.hits_addend : 1;
}

/**
 * descriptorCost — descriptor `i`'s cost, once its key is known to fit the store's cap (see leastKeyLength: checked
 * before the descriptor is matched, so a 3 MB value is never walked against the config's wildcards). `base` — the
 * request's cost (requestCost).
 */
export function descriptorCost(domain: string, d: RlsDescriptor, base: number, i: number): number {
  const least = leastKeyLength(domain, d.entries ?? NO_ENTRIES);
  if (least > MAX_KEY_LENGTH) throw keyTooLong(i, least);
  return hits(d, base, i);
}

/** ownLimit — descriptor `i`'s own limit (its `limit`: a uint32 per a known unit, by name), or undefined. */
export function ownLimit(d: RlsDescriptor, i: number): RequestOverride | undefined {
  return d.limit !== undefined && d.limit !== null ? overrideOf(d, i) : undefined;
}

const NO_ENTRIES: readonly RlsEntry[] = [];

/**
 * leastKeyLength — the fewest characters the store key of a descriptor can have (an entry's absent key or value,
 * as protobufjs decodes proto3's empty string, is set to '' on the way): the domain, `:`, and every entry's
 * key, `=` and value, joined by `&` — the key (config/key.ts descriptorKey) before its escapes, which only lengthen
 * it. So a descriptor past MAX_KEY_LENGTH here would make a key past it too, and is refused before it is matched,
 * while every key under the cap passes as before. The cap bounds the sum of a descriptor's entries (with the domain),
 * not each entry alone.
 */
function leastKeyLength(domain: string, entries: readonly RlsEntry[]): number {
  let n = domain.length + 2 * entries.length;
  for (let j = 0; j < entries.length; j++) {
    const e = entries[j];
    // proto3 leaves an empty string off the wire (Envoy's entry of an empty header, a generic_key without value) and
    // protobufjs then leaves the field absent: it is '', as /json reads it (and envoyproxy/ratelimit's Go structs)
    if (e.key === undefined) e.key = '';
    if (e.value === undefined) e.value = '';
    n += e.key.length + e.value.length;
  }
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
