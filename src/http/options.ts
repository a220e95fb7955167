/**
 * http/options — what every middleware adapter takes (RateLimitOptions, documented on its fields) and gives back
 * (Verdict), the names of the options, and the checks of the options that are not the limiter's own: booleans, the
 * partition key, the Content-Length as a cost.
 */
import type { Decision } from '../core/types.js';
import { RatekeeperError, show } from '../core/errors.js';
import type { Duration } from '../core/duration.js';
import type { Limiter, LimiterOptions } from '../limiter.js';
import type { ClientKeyOptions } from './keys.js';
import { sha256PartitionKey, type PartitionKey, type QuotaUnit } from './headers.js';

/** Awaitable — a value, or a promise of it. */
export type Awaitable<T> = T | Promise<T>;

/**
 * RateLimitOptions — what every adapter takes. `Req` is the framework's request (Express `req`, Fastify
 * `request`, Hono `Context`, node:http `IncomingMessage`): the callbacks receive it as is.
 */
export interface RateLimitOptions<Req> extends ClientKeyOptions {
  /** limiter — the limiter to ask. Either this or `rules`. */
  limiter?: Limiter;
  /**
   * rules — the policy, when the middleware makes its own limiter (with `store`, `dryRun`, `clock`).
   * @example '10/s; 100/min'
   */
  rules?: LimiterOptions['rules'];
  /** store — for the limiter made from `rules`. @default memoryStore() */
  store?: LimiterOptions['store'];
  /** dryRun — for the limiter made from `rules`: measure and send the headers, never refuse. @default false */
  dryRun?: boolean;
  /**
   * clock — ms. Used by the limiter made from `rules` and for the legacy X-RateLimit-Reset time; when given, every
   * check also passes its time explicitly, so it overrides a store's own clock (Redis TIME) too.
   * @default Date (and the store's own clock, if it has one)
   */
  clock?: LimiterOptions['clock'];
  /**
   * key — the client's key (a user id, an API key…). Without it: the client IP, see {@link ClientKeyOptions}.
   * @example (req) => req.get('x-api-key') ?? req.ip
   */
  key?: (req: Req) => Awaitable<string>;
  /** skip — requests for which it returns true are not counted and get no rate-limit headers. */
  skip?: (req: Req) => Awaitable<boolean>;
  /**
   * cost — what a request spends: a number, a function of the request, or `'content-length'` (the request's
   * body size in bytes, 0 when it has none: the leaky bucket's "bytes" case).
   * @default 1
   */
  cost?: number | 'content-length' | ((req: Req) => Awaitable<number>);
  /** quotaUnit — the `qu` of RateLimit-Policy. @default 'content-bytes' with cost 'content-length', else 'requests' */
  quotaUnit?: QuotaUnit;
  /** headers — send the IETF `RateLimit-Policy` and `RateLimit` fields. @default true */
  headers?: boolean;
  /** legacyHeaders — also send `X-RateLimit-Limit`, `-Remaining` and `-Reset` (epoch seconds), of the binding rule. @default false */
  legacyHeaders?: boolean;
  /**
   * partitionKey — add `pk` to every item so that clients can tell partitions apart without the key being disclosed:
   * `true` for the first 12 bytes of the key's SHA-256 (needs `node:crypto`: Node >= 20.16, Bun, Deno), or your
   * own digest function (edge runtimes). @default false
   */
  partitionKey?: boolean | PartitionKey;
  /**
   * shaping — hold requests that a leakyBucket rule admits with a `delay` for that long, then serve them in
   * order (nginx `limit_req` without `nodelay`); a request that would wait longer than `maxDelay` is refused
   * (429) without being charged. Without it, `delay` is ignored and admitted requests are served at once.
   * @example { maxDelay: '2s' }
   */
  shaping?: { maxDelay: Duration };
  /**
   * onLimiterError — what a request gets when the limiter (or `key`/`skip`/`cost`) throws or rejects — a store
   * down with no fallback, a bad key: `'reject'` answers 503 (fail closed), `'pass'` serves it without headers
   * (fail open). The server never crashes either way. A store's own failure policy comes first: a decision it
   * returns (`reason: 'store-unavailable'`) is applied as it says (503 when not allowed).
   * @default 'reject'
   */
  onLimiterError?: 'reject' | 'pass';
  /** onError — told about every such error (to log it); its own errors are ignored. */
  onError?: (error: unknown, req: Req) => void;
  /**
   * skipFailedRequests — count only the requests that succeed: a request is charged when it is decided, and its
   * charge is given back (`limiter.refund`) once its response says it failed (see `requestWasSuccessful`; a
   * connection closed before the response was complete is a failure). express-rate-limit's option of the same name.
   * @default false
   */
  skipFailedRequests?: boolean;
  /**
   * skipSuccessfulRequests — count only the requests that fail: the brute-force limit of a login form, which a
   * user who types the password right never runs into. Charged at the decision, given back once the response
   * succeeded. @default false
   */
  skipSuccessfulRequests?: boolean;
  /**
   * requestWasSuccessful — whether a response counts as a success, from the request and the response's status.
   * Used with skipFailedRequests / skipSuccessfulRequests.
   * @default (req, status) => status < 400
   */
  requestWasSuccessful?: (req: Req, status: number) => Awaitable<boolean>;
}

/**
 * RATE_LIMIT_OPTIONS — the names of {@link RateLimitOptions} (with {@link ClientKeyOptions}'): an adapter adds its
 * own (`onLimited`…) and every other name is refused, with the closest one suggested (`trustproxy` would otherwise
 * be ignored, and every client behind the proxy would share one key).
 */
export const RATE_LIMIT_OPTIONS: ReadonlySet<string> = new Set([
  'limiter', 'rules', 'store', 'dryRun', 'clock', 'key', 'skip', 'cost', 'quotaUnit', 'headers', 'legacyHeaders',
  'partitionKey', 'shaping', 'onLimiterError', 'onError', 'trustProxy', 'proxyHeader', 'ipv6Prefix', 'ipv4Prefix',
  'skipFailedRequests', 'skipSuccessfulRequests', 'requestWasSuccessful',
]);

/** optionNames — {@link RATE_LIMIT_OPTIONS} and an adapter's own names. */
export function optionNames(...own: string[]): ReadonlySet<string> {
  return new Set([...RATE_LIMIT_OPTIONS, ...own]);
}

/** Facts — how an adapter reads its request: the peer address and a header by lowercase name. */
export interface Facts<Req> {
  peer(req: Req): string | undefined;
  header(req: Req, name: string): string | undefined;
}

/**
 * Verdict — what the adapter does with a request.
 * `pass`: call the next handler, after `delay` ms (shaping), with `headers` set.
 * `limited`: answer `status` 429 (or the user's handler) with `headers` and the problem `body`.
 * `unavailable`: answer 503 with `body` (the store failed closed, or the limiter threw and `onLimiterError` is 'reject').
 * `invalid`: answer 400 with `body` (the request cannot be limited: no key, a malformed Content-Length…).
 */
export interface Verdict {
  kind: 'pass' | 'limited' | 'unavailable' | 'invalid';
  status: number;
  /** headers — [name, value] pairs; RateLimit and RateLimit-Policy are lists, to be appended to any already set. */
  headers: [string, string][];
  /** delay — ms to hold a passing request (shaping); 0 otherwise. */
  delay: number;
  /** decision — the limiter's decision (absent when skipped or on error). */
  decision?: Decision;
  key?: string;
  /** cost — what the request was charged (set only when the middleware counts by outcome: see RateLimitCore.settle). */
  cost?: number;
  /** body — the application/problem+json body of a refusal. */
  body?: string;
  error?: unknown;
}

/** isPromise — a thenable (a callback may return any promise implementation). */
export function isPromise<T>(v: Awaitable<T>): v is Promise<T> {
  return typeof v === 'object' && v !== null && typeof (v as Promise<T>).then === 'function';
}

/** partitionKeyOf — the partitionKey option as a digest function, or undefined (off). */
export function partitionKeyOf(v: unknown): PartitionKey | undefined {
  if (v === undefined || v === false) return undefined;
  if (typeof v === 'function') return v as PartitionKey;
  if (v !== true) throw new RatekeeperError(`partitionKey must be a boolean or a function (key) => Uint8Array, got ${show(v)}`);
  const digest = sha256PartitionKey();
  if (digest === undefined) throw new RatekeeperError(`partitionKey: true needs node:crypto, which this runtime lacks: pass a function (key) => Uint8Array instead`);
  return digest;
}

/** bool — a boolean option, `fallback` when absent. */
export function bool(v: unknown, what: string, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') throw new RatekeeperError(`${what} must be a boolean, got ${show(v)}`);
  return v;
}

/** contentLength — the Content-Length as a cost: its value, or 0 when absent. A malformed one throws. */
export function contentLength(value: string | undefined): number {
  if (value === undefined || value === '') return 0;
  if (!/^\d{1,15}$/.test(value.trim())) throw new RatekeeperError(`Content-Length ${show(value)} is not a length`, 'ERR_ARGUMENT');
  return Number(value.trim());
}

