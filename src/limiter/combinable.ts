/**
 * limiter/combinable — what a limiter offers to an all-or-nothing combiner (checkAll, src/multi.ts): its store, its
 * policy's bound store, its clock, its denial cache and observer as two calls, and the decisions of a part that was
 * not asked or whose charge was given back. The combiner sees a limiter only through {@link Combinable}.
 */
import type { Decision } from '../core/types.js';
import { Outcome, type Policy } from '../core/policy.js';
import type { BoundStore, Store } from '../stores/types.js';

/** Combinable — a limiter as one part of a compound request. */
export interface Combinable {
  /** store — the limiter's store: parts on one store that can decide them together (Store.evaluateAll) are one step. */
  readonly store: Store;
  /** bound — the store bound to the limiter's policy (a pending takeover completed first). */
  readonly bound: BoundStore;
  /** cachesDenials — the limiter answers refusals from a local cache (denied, remember, epoch below). */
  readonly cachesDenials: boolean;
  /** denialEpoch — the denial cache's epoch now (0 without one): a refusal decided across a change is not remembered. */
  readonly denialEpoch: number;
  /** time — an explicit `now` checked (ms, else an ERR_ARGUMENT), or the call's time: undefined on a store with its own clock, else tick(). */
  time(options: { now?: number } | undefined): number | undefined;
  /** tick — the limiter's clock, ms, never stepping back. */
  tick(): number;
  /** denied — the denial cache's refusal of (key, cost) at local ms `at`, recorded by the observer; undefined: ask the store. */
  denied(key: string, cost: number, at: number): Decision | undefined;
  /** remember — a decision the store made for (key, cost) at local ms `at`, for the denial cache (epoch: denialEpoch then). */
  remember(key: string, cost: number, at: number, d: Decision, epoch: number): void;
  /** record — a decision made for (key, cost) at `at` (ms; undefined: tick()), for the observer (nothing when the limiter observes nothing). */
  record(key: string, cost: number, d: Decision, at: number | undefined): void;
  /** unasked — the decision of a part that was not asked (another part's cached refusal): nothing charged, nothing known. */
  unasked(): Decision;
  /** vetoed — the decision `d` of a part that admitted and was charged, once its charge was given back (`after`: a look then). */
  vetoed(d: Decision, after: Decision): Decision;
}

/**
 * vetoed — the decision of a part that admitted and was charged, once its charge was given back: its own verdict
 * (`allowed`, retryAfter 0, its measured rates), remaining and resetAfter from the refunded state, no delay —
 * what the part would have said had it been vetoed before being charged.
 */
export function vetoed(policy: Policy, d: Decision, after: Decision): Decision {
  const rules = d.rules.map((r, i) => new Outcome(
    r.name, r.algorithm, r.allowed, r.limit, after.rules[i].remaining, 0, after.rules[i].resetAfter, r.rate, r.delay === undefined ? undefined : 0,
  ));
  const out = policy.finish(rules, true);
  if (d.fallback === true) out.fallback = true;
  return out;
}

/** unasked — the decision of an item that was not asked (the request was refused by a denial cache): nothing charged, nothing known. */
export function unasked(policy: Policy): Decision {
  return policy.finish(policy.rules.map((c) => new Outcome(c.name, c.algorithm, true, c.limit, 0, 0, 0, undefined, undefined)), true);
}
