/**
 * same — whether two loaded configurations say the same thing: the same domains, limits and policies, field by field,
 * wherever in which file they are written. A rewrite that changes only comments, formatting, the order of files or
 * the line a descriptor is on is not a change of configuration (the service does not reload for it).
 */
import type { ServiceConfig } from './types.js';

/**
 * sameConfig — `a` and `b` hold the same domains, limits (in order) and policies, ignoring where each is written.
 * Cheap when they differ (the common case, a real change): counts, then each limit's id and fingerprint, stop at the
 * first difference; only a configuration whose every limit has the same rules is compared field by field.
 */
export function sameConfig(a: ServiceConfig, b: ServiceConfig): boolean {
  if (a.limits.length !== b.limits.length || a.policies.size !== b.policies.size || a.domains.length !== b.domains.length) return false;
  for (let i = 0; i < a.domains.length; i++) if (a.domains[i] !== b.domains[i]) return false;
  for (let i = 0; i < a.limits.length; i++) if (a.limits[i].id !== b.limits[i].id || a.limits[i].fingerprint !== b.limits[i].fingerprint) return false;
  for (const [name, p] of a.policies) {
    const q = b.policies.get(name);
    if (q === undefined || q.fingerprint !== p.fingerprint || canonical(p) !== canonical(q)) return false;
  }
  for (let i = 0; i < a.limits.length; i++) if (canonical(a.limits[i]) !== canonical(b.limits[i])) return false;
  return true;
}

/** canonical — a limit's or policy's content as one string: every field but `file` and `line` (where it is written). */
function canonical(x: object): string {
  return JSON.stringify(x, (k, v: unknown) => (k === 'file' || k === 'line' ? undefined : v === Infinity ? 'Infinity' : v));
}
