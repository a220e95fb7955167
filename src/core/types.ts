/** Algorithm — the name of a rule's algorithm, as `rules.*` spells it. */
export type Algorithm =
  | 'fixedWindow' | 'slidingWindow' | 'slidingLog' | 'tokenBucket' | 'leakyBucket' | 'gcra' | 'earrrl' | 'exponential';

/**
 * Accounting — what a denied attempt costs.
 * `'leaky'`: nothing (the client's retries are free; it gets back in as soon as the rule allows).
 * `'strict'`: the same as an admitted request, so a client that keeps hammering stays out until it slows down.
 */
export type Accounting = 'leaky' | 'strict';

/** Reason — why a decision came out as it did. */
export type Reason = 'allowed' | 'limited' | 'blocked' | 'exempt' | 'dry-run' | 'store-unavailable';

/** RuleOutcome — what one rule of the policy said about one request. */
export interface RuleOutcome {
  /** name — the rule's name (`'20/1m'` unless given). */
  name: string;
  algorithm: Algorithm;
  /** allowed — whether this rule, on its own, admitted the request. */
  allowed: boolean;
  /** limit — the rule's `limit` (cost units per `per`). */
  limit: number;
  /** remaining — further cost-1 requests this rule would admit right now, after this decision. */
  remaining: number;
  /**
   * retryAfter — ms until this rule would admit the same request (0 when the decision is allowed,
   * Infinity when never: the cost is over what the rule can ever admit).
   */
  retryAfter: number;
  /** resetAfter — ms until this rule's state for the client is back to a fresh client's. */
  resetAfter: number;
  /**
   * rate — the measured recent rate in cost units per second (earrrl, exponential). Present on every outcome the
   * library makes (one object shape), `undefined` where not measured.
   */
  rate?: number | undefined;
  /** delay — ms to hold the admitted request so that the output is smooth (leakyBucket); `undefined` elsewhere. */
  delay?: number | undefined;
}

/** Decision — the one answer shape of every algorithm, policy and store. */
export interface Decision {
  /** allowed — what the caller should do. */
  allowed: boolean;
  reason: Reason;
  /** limit — of the binding rule: the most restrictive one (longest wait when denied, least remaining when allowed). */
  limit: number;
  /** remaining — of the binding rule: further cost-1 requests allowed right now, after this decision. */
  remaining: number;
  /**
   * retryAfter — ms until the same request would be allowed with no other traffic; 0 when allowed; Infinity when never.
   * Exact: at `now + retryAfter` it is allowed, one millisecond earlier it is not.
   */
  retryAfter: number;
  /** resetAfter — ms until the binding rule is back to a fresh client's state. */
  resetAfter: number;
  /** rate — the highest measured recent rate among the rules that measure one, per second; `undefined` when none does. */
  rate?: number | undefined;
  /** delay — ms to hold an admitted request for smooth output (the largest of the leakyBucket rules'); `undefined` without one. */
  delay?: number | undefined;
  /** blockReason — the `reason` given to `block()`, on a `'blocked'` decision. */
  blockReason?: string;
  /** fallback — true when the decision came from the local fallback store because the configured store failed. */
  fallback?: boolean;
  /** rules — one per rule, in the policy's order. */
  rules: RuleOutcome[];
}

/**
 * Clock — where the façade reads the time, in ms since the epoch. Tests inject their own.
 * With `monotonic` (ms from any origin, never stepping back, as `performance.now()`), the façade reads `now()` once to
 * anchor and from then on advances with `monotonic()`: steps of the wall clock change nothing. Without it every
 * read is `now()`, clamped so that it never steps back. The default is `Date.now` anchored, `performance.now` after.
 */
export interface Clock {
  now(): number;
  monotonic?(): number;
}

/** Override — a manual block or exemption of one key; `until` is an absolute time in ms (Infinity: until lifted). */
export interface Override {
  kind: 'block' | 'exempt';
  until: number;
  reason?: string;
}
