/**
 * runtime — one configured limit, native policy or request-supplied limit, live: its limiter and what its decisions
 * are reported as (the RateLimit-Policy field serialized once, the RateLimit field's writer). Also how a native
 * policy's clients are keyed (`policyKey`) and how a limiter the service no longer uses is let go (`retire`).
 */
import { Limiter, MAX_KEY_LENGTH } from '../limiter.js';
import type { Store } from '../stores/types.js';
import { LimitFieldWriter, policyField } from '../http/headers.js';
import { BadRequest } from './rls.js';

/** Runtime — a limiter in service and its report. */
export interface Runtime {
  limiter: Limiter;
  /** policyField — the RateLimit-Policy field of the limiter's rules (serialized once); writer — its RateLimit field. */
  policyField: string;
  writer: LimitFieldWriter;
  /** fingerprint — the rules' identity: a reload that keeps it keeps the limiter, and so every client's state. */
  fingerprint: string;
  /** successor — the limiter that took this one's clients over (a compatible rule change): this one is never revived. */
  successor?: Runtime;
}

/** runtimeOf — a limiter as a Runtime: its policy's fields computed once. */
export function runtimeOf(limiter: Limiter, fingerprint: string): Runtime {
  return { limiter, fingerprint, policyField: policyField(limiter.policy.rules, undefined), writer: new LimitFieldWriter(limiter.policy.rules), successor: undefined };
}

/**
 * retire — a limiter the service no longer uses: its own clients taken over first (a pending takeover, so that they
 * are forgotten with it), it stops sharing its observations (a timer, on Redis) and the store forgets its in-process
 * table (the memory store; Redis keys expire on their own).
 */
export function retire(store: Store, r: Runtime): void {
  r.limiter.settle();
  r.limiter.sharing?.stop();
  store.detach?.(r.limiter.policy);
}

/**
 * policyKey — a native policy's store key for a client: the policy's name and the key, injectively. With key '', the
 * namespace of the policy's limiter (the store puts it in front of every client key).
 */
export function policyKey(policy: string, key: string): string {
  return `${policy.length}:${policy}:${key}`;
}

/**
 * checkPolicyKey — throws a BadRequest naming `field` when policyKey(policy, key) would be longer than the store takes
 * (MAX_KEY_LENGTH), measured without building it: `<length>:<policy>:<key>`.
 */
export function checkPolicyKey(policy: string, key: string, field: string): void {
  const p = policy.length;
  const n = (p < 10 ? 1 : p < 100 ? 2 : String(p).length) + p + key.length + 2;
  if (n > MAX_KEY_LENGTH) throw new BadRequest(field, `is too long: ${key.length} characters, with the policy's name at most ${MAX_KEY_LENGTH} are accepted`);
}
