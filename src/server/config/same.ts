/**
 * same — whether two loaded configurations say the same thing: the same domains, limits and policies, field by field,
 * wherever in which file they are written. A rewrite that changes only comments, formatting, the order of files or
 * the line a descriptor is on is not a change of configuration (the service does not reload for it).
 */
import type { ServiceConfig } from './types.js';

/** sameConfig — `a` and `b` hold the same domains, limits (in order) and policies, ignoring where each is written. */
export function sameConfig(a: ServiceConfig, b: ServiceConfig): boolean {
  if (a.limits.length !== b.limits.length || a.policies.size !== b.policies.size) return false;
  return canonical(a) === canonical(b);
}

/** canonical — the configuration's content as one string: every field but `file` and `line` (where it is written). */
function canonical(c: ServiceConfig): string {
  return JSON.stringify([c.domains, c.limits, [...c.policies.values()]], (k, v: unknown) => (k === 'file' || k === 'line' ? undefined : v === Infinity ? 'Infinity' : v));
}
