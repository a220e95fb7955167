import { serializeInteger, serializeList, serializeString } from 'structured-headers';
import type { Decision, RuleOutcome } from '../core/types.js';
import type { RuleConfig } from '../core/algorithms/common.js';

/**
 * SfItem, SfParameters — a Structured Field Item (RFC 9651) as structured-headers represents one: [bare item,
 * parameters]. Declared here, so that ratekeeper's declarations need no types from structured-headers (whose
 * package has none that `moduleResolution: node10` can find).
 */
export type SfBareItem = string | number | boolean | Uint8Array;
export type SfParameters = Map<string, SfBareItem>;
export type SfItem = [value: SfBareItem, parameters: SfParameters];

/**
 * QuotaUnit — the `qu` parameter of RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers, RateLimit Quota
 * Units registry): what a rule's `limit` counts. `'requests'` is the draft's default and is not written.
 */
export type QuotaUnit = 'requests' | 'content-bytes' | 'concurrent-requests';

/** MAX_INTEGER — the largest Integer a structured field may carry (RFC 9651 §3.3.1). */
const MAX_INTEGER = 999_999_999_999_999;

/** seconds — ms as whole seconds, rounded up (delay-seconds), or undefined when never (Infinity). */
export function seconds(ms: number): number | undefined {
  if (!(ms < Infinity)) return undefined;
  const s = Math.ceil(ms / 1000);
  return s > 0 ? Math.min(s, MAX_INTEGER) : 0;
}

function integer(n: number): number {
  if (!(n > 0)) return 0;
  return n >= MAX_INTEGER ? MAX_INTEGER : Math.floor(n);
}

/**
 * policyItems — one Quota Policy Item per rule: `"name";q=<limit>;w=<per in s>` (+ `qu`, `pk`).
 * `q` is the rule's limit rounded down (the draft wants an Integer); `w` is written only when `per` is a whole
 * number of seconds (the draft has no sub-second windows, and rounding would misstate the rate).
 */
export function policyItems(rules: readonly RuleConfig[], unit: QuotaUnit | undefined, pk?: Uint8Array): SfItem[] {
  return rules.map((r) => {
    const p: SfParameters = new Map();
    p.set('q', integer(r.limit));
    if (unit !== undefined && unit !== 'requests') p.set('qu', unit);
    if (r.per % 1000 === 0) p.set('w', Math.min(r.per / 1000, MAX_INTEGER));
    if (pk !== undefined) p.set('pk', pk);
    return [r.name, p];
  });
}

/** policyField — the RateLimit-Policy field value for a policy. */
export function policyField(rules: readonly RuleConfig[], unit: QuotaUnit | undefined, pk?: Uint8Array): string {
  return serializeList(policyItems(rules, unit, pk));
}

/**
 * limitItems — one Service Limit Item per rule: `"name";r=<remaining>;t=<s>`.
 * `r` is what the rule would still admit now (0 for every rule of a block). `t`, the effective window, is the
 * rule's wait when the rule refused the request (nothing more is available before then) and its reset time
 * otherwise (when it is back to a fresh client's quota); it is left out when infinite.
 */
export function limitItems(d: Decision, pk?: Uint8Array): SfItem[] {
  const blocked = d.reason === 'blocked' || (d.reason === 'dry-run' && d.rules.every((r) => r.allowed));
  const out = new Array<SfItem>(d.rules.length);
  for (let i = 0; i < d.rules.length; i++) {
    const r: RuleOutcome = d.rules[i];
    const p: SfParameters = new Map();
    if (blocked) {
      p.set('r', 0);
      const t = seconds(d.retryAfter);
      if (t !== undefined) p.set('t', t);
    } else {
      p.set('r', integer(r.remaining));
      const t = seconds(r.allowed ? r.resetAfter : r.retryAfter);
      if (t !== undefined) p.set('t', t);
    }
    if (pk !== undefined) p.set('pk', pk);
    out[i] = [r.name, p];
  }
  return out;
}

/** limitField — the RateLimit field value for a decision (the general path: Items through serializeList). */
export function limitField(d: Decision, pk?: Uint8Array): string {
  return serializeList(limitItems(d, pk));
}

/**
 * LimitFieldWriter — the RateLimit field of one policy, on the hot path: each rule's name is serialized once
 * (serializeString) and the per-request numbers by serializeInteger, joined with the list and parameter syntax
 * of RFC 9651 (`, `, `;`, `=`). Byte for byte what {@link limitField} gives (a test holds it to that), without
 * building a Map per rule per request.
 */
export class LimitFieldWriter {
  /** names — the sf-string of each rule's name, in policy order. */
  private readonly names: string[];
  constructor(rules: readonly RuleConfig[]) {
    this.names = rules.map((r) => serializeString(r.name));
  }

  write(d: Decision, pk?: Uint8Array): string {
    if (pk !== undefined || d.reason === 'blocked' || d.reason === 'dry-run' || d.rules.length !== this.names.length) return limitField(d, pk);
    let out = '';
    for (let i = 0; i < d.rules.length; i++) {
      const r = d.rules[i];
      const t = seconds(r.allowed ? r.resetAfter : r.retryAfter);
      out += (i === 0 ? '' : ', ') + this.names[i] + ';r=' + serializeInteger(integer(r.remaining)) + (t === undefined ? '' : ';t=' + serializeInteger(t));
    }
    return out;
  }
}

/** PartitionKey — how a client key becomes the `pk` of the fields: a digest that does not disclose it. */
export type PartitionKey = (key: string) => Uint8Array;

/**
 * sha256PartitionKey — the first 12 bytes of the key's SHA-256, from `node:crypto` (Node, Bun, Deno), found through
 * `process.getBuiltinModule` so that nothing here imports `node:*` and the Hono adapter still loads on edge
 * runtimes. Undefined where there is no `node:crypto`: there the user passes their own digest function.
 */
export function sha256PartitionKey(): PartitionKey | undefined {
  const load = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  const crypto = load?.('node:crypto') as { createHash?: (alg: string) => { update(s: string, enc: 'utf8'): { digest(): Uint8Array } } } | undefined;
  const createHash = crypto?.createHash;
  if (createHash === undefined) return undefined;
  return (key) => new Uint8Array(createHash('sha256').update(key, 'utf8').digest().subarray(0, 12));
}

/** violated — the names of the rules that refused the request (the problem's `violated-policies`). */
export function violated(d: Decision): string[] {
  const out: string[] = [];
  for (const r of d.rules) if (!r.allowed) out.push(r.name);
  return out;
}

/** PROBLEM_BASE — the HTTP Problem Types registry the draft registers its types in. */
export const PROBLEM_BASE = 'https://iana.org/assignments/http-problem-types#';

/**
 * problem — an `application/problem+json` body (RFC 9457). `quota-exceeded` and `abnormal-usage-detected` are
 * the draft's problem types, with its `violated-policies` extension member.
 */
export function problem(type: 'quota-exceeded' | 'abnormal-usage-detected' | 'about:blank', status: number, title: string, extra?: Record<string, unknown>): string {
  return JSON.stringify({ type: type === 'about:blank' ? type : PROBLEM_BASE + type, title, status, ...extra });
}
