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
 * FOREIGN — options of the rate limiters users come from (express-rate-limit, rate-limiter-flexible,
 * @upstash/ratelimit), each with where the same idea lives here: an unknown option that is one of these gets a
 * pointer instead of a bare "not an option". docs/migrating/ has one page per library.
 */
const FOREIGN: ReadonlyMap<string, string> = new Map([
  ['windowMs', "express-rate-limit's window goes in `rules` with its limit, e.g. rules: '100/15m'; see docs/migrating/express-rate-limit.md"],
  ['max', "express-rate-limit's max goes in `rules` with its window, e.g. rules: '100/15m'; see docs/migrating/express-rate-limit.md"],
  ['limit', "a limit goes in `rules` with its period, e.g. rules: '100/15m' or [rules.gcra({ limit: 100, per: '15m' })]"],
  ['keyGenerator', "the client's key is `key`, e.g. key: (req) => req.user.id"],
  ['handler', "a refused request is answered by `onLimited` (default: 429 with a problem+json body)"],
  ['message', "a refused request's body is `onLimited`'s to write (default: a problem+json body)"],
  ['statusCode', "a refused request's status is `onLimited`'s to choose (default: 429)"],
  ['standardHeaders', "the IETF RateLimit and RateLimit-Policy fields are on by default (`headers`); `legacyHeaders` adds X-RateLimit-*"],
  ['requestPropertyName', 'the decision is on req.rateLimit (Express), request.rateLimit (Fastify), c.get(\'rateLimit\') (Hono)'],
  ['points', "rate-limiter-flexible's points per duration go in `rules`, e.g. rules: '10/1s'; see docs/migrating/rate-limiter-flexible.md"],
  ['duration', "rate-limiter-flexible's points per duration go in `rules`, e.g. rules: '10/1s'; see docs/migrating/rate-limiter-flexible.md"],
  ['blockDuration', "rate-limiter-flexible's blockDuration (seconds) is the limiter's autoBlock, e.g. limiter({ rules, autoBlock: { for: '15m' } }) (a middleware takes it as `limiter`): once refused, a client is blocked that long; see docs/migrating/rate-limiter-flexible.md"],
  ['keyPrefix', "the Redis key prefix is redisStore({ client, prefix }) (ratekeeper/redis)"],
  ['storeClient', "a Redis client goes to the store: store: redisStore({ client }) (ratekeeper/redis)"],
  ['execEvenly', "smoothing is rules.leakyBucket with the middleware's shaping: { maxDelay }"],
  ['inMemoryBlockOnConsumed', "refusals answered in-process until their retryAfter: denialCache: true"],
  ['insuranceLimiter', "when Redis fails, redisStore({ client, onError: 'memory' }) decides on a local memory store"],
  ['redis', "a Redis client goes to the store: store: redisStore({ client }) (ratekeeper/redis); see docs/migrating/upstash-ratelimit.md"],
  ['analytics', "observe: true counts decisions and finds the heaviest clients (ratekeeper/admin shows them)"],
  ['ephemeralCache', "refusals answered in-process until their retryAfter: denialCache: true"],
]);

/** FOREIGN_WHERE — the option objects where other libraries' names are looked for: the limiter's and the middleware's. */
const FOREIGN_WHERE: ReadonlySet<string> = new Set(['limiter', 'rateLimit', 'ratekeeperPlugin', 'config.rateLimit']);

/** foreignHint — `' (express-rate-limit's window goes in …)'` when `name` is another library's option, else `''`. */
export function foreignHint(name: string): string {
  const hint = FOREIGN.get(name);
  return hint === undefined ? '' : ` (${hint})`;
}

/**
 * hintFor — the pointer for an unknown option `name` of `where`: another library's option (in the limiter's and the
 * middleware's options), else the nearest known name.
 */
export function hintFor(name: string, known: Iterable<string>, where: string): string {
  return (FOREIGN_WHERE.has(where) ? foreignHint(name) : '') || didYouMean(name, known);
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
  throw new RatekeeperError(`${where}.${bad} is not an option of ${where}${hintFor(bad, known, where)}, got ${show(value)}`, code);
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
