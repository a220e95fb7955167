import type { Policy } from '../../core/policy.js';

/**
 * lengthens — whether some client's state may take longer to become a fresh client's under `to` than under `from`
 * (compatible policies: same algorithms and periods): a lower rate drains a bucket's debt or a GCRA schedule more
 * slowly, and a lower limit or a longer half-life takes a decaying estimate longer to fall to nothing. The windows
 * and the sliding log end with their period, whatever the limit. When it does, keys written under `from` carry an
 * expiry that would forgive their clients early: {@link retime} rewrites them.
 */
export function lengthens(from: Policy, to: Policy): boolean {
  return to.rules.some((r, i) => {
    const f = from.rules[i];
    switch (r.algorithm) {
      case 'tokenBucket': case 'leakyBucket': case 'gcra': case 'exponential': return r.limit < f.limit;
      case 'earrrl': return r.limit < f.limit || r.halfLife > f.halfLife;
      default: return false;
    }
  });
}

/** Scanner — what retime needs of the store: the keys of one pattern on every master, and a call per key. */
export interface Scanner {
  /** scan — every key matching `pattern`, in batches (SCAN … MATCH … COUNT on each master). */
  scan(pattern: string, batch: (keys: string[]) => Promise<void>): Promise<void>;
  /** rewrite — reads and writes one key again under the new policy (its refund script at cost 0). */
  rewrite(key: string): Promise<unknown>;
}

/** IN_FLIGHT — rewrites sent at once by a pass (one SCAN batch is up to ~1000 keys). */
const IN_FLIGHT = 64;

/** globEscape — a literal string inside a Redis MATCH pattern (`*`, `?`, `[`, `]` and `\` escaped). */
export const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * retime — rewrites every stored client of a shared policy (keys `<prefix>{<client>}:<id>`) under its new rules: the
 * state converted where its numbers depend on the rate (gcra), and the key's expiry computed from the new rules, so
 * that an expiry set under the old, looser rules does not forgive its client early. One SCAN pass per master (COUNT
 * 1000) and one script call per key, IN_FLIGHT at a time; returns the number of keys rewritten. A key the pass
 * has not reached yet keeps its old expiry until then (a check of the key converts and re-expires it too).
 */
export async function retime(scanner: Scanner, prefix: string, id: string): Promise<number> {
  const tail = `}:${id}`;
  let count = 0;
  await scanner.scan(`${globEscape(prefix)}{*${tail}`, async (keys) => {
    // a client's key has exactly one `}` (encodeKey escapes the client's own); the index and summary keys of the id do not end so
    const mine = keys.filter((k) => k.endsWith(tail) && k.indexOf('}') === k.length - tail.length);
    // IN_FLIGHT at a time: the checks sharing the connection wait behind at most that many rewrites
    for (let i = 0; i < mine.length; i += IN_FLIGHT) await Promise.all(mine.slice(i, i + IN_FLIGHT).map((k) => scanner.rewrite(k)));
    count += mine.length;
  });
  return count;
}
