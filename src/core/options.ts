import { RatekeeperError, show } from './errors.js';

/**
 * closest — the candidate nearest to `name` by edit distance (case-insensitive, transpositions count once), when it
 * is near enough to be a typo: at most a third of the longer name's length, and never more than 3 edits.
 */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const a = name.toLowerCase();
  for (const c of candidates) {
    const d = distance(a, c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  if (best === undefined) return undefined;
  const allowed = Math.min(3, Math.max(1, Math.floor(Math.max(a.length, best.length) / 3)));
  return bestDistance <= allowed ? best : undefined;
}

/** distance — the optimal-string-alignment edit distance (insert, delete, substitute, swap two neighbours). */
function distance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  let prev2 = new Array<number>(n + 1).fill(0);
  let prev = Array.from({ length: n + 1 }, (_, j) => j);
  for (let i = 1; i <= m; i++) {
    const cur = new Array<number>(n + 1);
    cur[0] = i;
    for (let j = 1; j <= n; j++) {
      const sub = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + sub);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
      cur[j] = d;
    }
    prev2 = prev;
    prev = cur;
  }
  return prev[n];
}

/** didYouMean — `' (did you mean `dryRun`?)'` when a known name is near `name`, else `''`. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const c = closest(name, known);
  return c === undefined ? '' : ` (did you mean \`${c}\`?)`;
}

/**
 * unknownOption — the first own key of `options` that is not in `known`, or undefined. Cheap enough for a hot path's
 * cold branch; callers that see the same options shape on every call should cache that it passed.
 */
export function unknownOption(options: object, known: ReadonlySet<string>): string | undefined {
  for (const k in options) if (Object.prototype.hasOwnProperty.call(options, k) && !known.has(k)) return k;
  return undefined;
}

/**
 * checkOptions — throws a {@link RatekeeperError} naming `where`, the unknown option, its value and the closest known
 * name when `options` has an own key that is not in `known`:
 * `ratekeeper: limiter.dryrun is not an option of limiter (did you mean `dryRun`?), got true`.
 */
export function checkOptions(
  options: object, known: ReadonlySet<string>, where: string, code: 'ERR_CONFIG' | 'ERR_ARGUMENT' = 'ERR_CONFIG',
): void {
  const bad = unknownOption(options, known);
  if (bad === undefined) return;
  const value = (options as Record<string, unknown>)[bad];
  throw new RatekeeperError(`${where}.${bad} is not an option of ${where}${didYouMean(bad, known)}, got ${show(value)}`, code);
}

/**
 * checkOptionsObject — {@link checkOptions} for a value that must also be an object (not null, an array, a number):
 * `ratekeeper: block takes an options object like { for: '1h' }, got 5`.
 */
export function checkOptionsObject(
  options: unknown, known: ReadonlySet<string>, where: string, code: 'ERR_CONFIG' | 'ERR_ARGUMENT' = 'ERR_CONFIG',
): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    const first = known.values().next().value;
    throw new RatekeeperError(`${where} takes an options object${first === undefined ? '' : ` like { ${first}: … }`}, got ${show(options)}`, code);
  }
  checkOptions(options, known, where, code);
}
