import type { Decision, Override } from '../core/types.js';
import type { Policy } from '../core/policy.js';

/**
 * Store — where client state lives. A limiter attaches its policy once and then talks to the bound store.
 * Stores persist; the core decides (the memory store runs core/policy.ts in-process, the Redis store its Lua twin).
 */
export interface Store {
  /**
   * attach — binds the store to one policy (one limiter). The same store may serve several limiters. `namespace`
   * (the limiter's, '' for none) goes in front of every client key where the store is shared by limiters of the same
   * rules (Redis: inside the hash tag); the bound store's methods take and list client keys without it.
   */
  attach(policy: Policy, namespace?: string): BoundStore;
  /**
   * evaluateAll — decides several parts (each bound to this store, naming distinct states) as one request,
   * all-or-nothing: every part decides on its stored state; when every part's decision is `allowed`, every part is
   * charged as by `evaluate`; otherwise none that admitted is charged (refused parts are charged as refused: their
   * strict rules), and each decision keeps its own verdict (Policy.evaluate's `veto`). Returns undefined when the
   * store cannot do that atomically for these parts (checkAll then decides and refunds). Optional.
   */
  evaluateAll?(parts: readonly Part[], now: number | undefined): Decision[] | Promise<Decision[]> | undefined;
  /** close — releases what the store holds open (timers, connections it owns). */
  close?(): Promise<void> | void;
  /**
   * succeed — binds the store to `to`, a policy that replaces `from` (a limiter's rules changed), carrying every
   * client's state, block and exemption over when the two are compatible (Policy.compatible), converted at `now`
   * (ms; undefined: the store's clock). Returns undefined when the store cannot (the limiter then attaches `to`
   * fresh). Optional.
   */
  succeed?(from: Policy, to: Policy, now: number | undefined, namespace?: string): BoundStore | undefined;
  /** detach — the policy is no longer used by any limiter: the store may forget what it keeps for it in process. */
  detach?(policy: Policy): void;
}

/** Part — one part of a compound request, as a store sees it: the policy's bound store, the client key, the cost. */
export interface Part {
  bound: BoundStore;
  key: string;
  cost: number;
}

/** OverrideRequest — a block or exemption to set: `for` in ms from now (Infinity: until lifted). */
export interface OverrideRequest {
  kind: Override['kind'];
  for: number;
  reason?: string;
  /** ifNone — set it only when the key has no block or exemption in force (an automatic block); else nothing changes. */
  ifNone?: boolean;
}

/** BoundStore — one policy's view of a store. Methods return values directly when `sync`, promises otherwise. */
export interface BoundStore {
  /** sync — true when every method returns its result synchronously (the memory store). */
  readonly sync: boolean;
  /** ownClock — true when the store reads its own time (Redis TIME) when `now` is undefined. */
  readonly ownClock: boolean;
  /** evaluate — decides a request of `cost` for `key` at `now` (ms; undefined: the store's clock) and stores the result. */
  evaluate(key: string, cost: number, now: number | undefined): Decision | Promise<Decision>;
  /** setOverride — blocks or exempts `key`; replaces any earlier block or exemption (the later one wins). */
  setOverride(key: string, request: OverrideRequest, now: number | undefined): void | Promise<void>;
  /** clearOverride — lifts `key`'s override if it is of `kind`. */
  clearOverride(key: string, kind: Override['kind']): void | Promise<void>;
  /** reset — forgets `key`'s rule state (not its block or exemption). */
  reset(key: string): void | Promise<void>;
  /**
   * refund — gives back `cost` units of `key`'s latest charges at `now` (each algorithm's refund; `leakyOnly`: only
   * to rules with leaky accounting) and returns what a look of cost 0 sees afterwards. Nothing to give back for an
   * unknown key. Optional: a store without it cannot refund (limiter.refund and checkAll across stores need it).
   */
  refund?(key: string, cost: number, now: number | undefined, leakyOnly: boolean): Decision | Promise<Decision>;

  // Observation (the operators' view): optional, every store of this package has them.
  /** override — `key`'s block or exemption in force at `now` (ms; undefined: the store's clock), if any. */
  override?(key: string, now: number | undefined): OverrideEntry | undefined | Promise<OverrideEntry | undefined>;
  /**
   * overrides — every block and exemption in force at `now` (ms; undefined: the store's clock); expired ones are
   * pruned on the way. `maxAge` (ms, with `now` undefined): a shared store may answer from a listing this recent that
   * it made for any of its limiters (a dashboard polling every limiter of one store pays for one listing).
   */
  overrides?(now: number | undefined, maxAge?: number): OverrideEntry[] | Promise<OverrideEntry[]>;
  /** shareSummary — writes this process's observation summary (`text`, kept `ttl` ms) where other processes read it. */
  shareSummary?(instance: string, text: string, ttl: number): Promise<void>;
  /** sharedSummaries — every process's latest summary text (its own included), for `top()` to merge. */
  sharedSummaries?(): Promise<string[]>;
}

/** OverrideEntry — one block or exemption as listed: `until` ms (Infinity: until lifted), `since` ms when it was set. */
export interface OverrideEntry {
  key: string;
  kind: Override['kind'];
  until: number;
  since?: number;
  reason?: string;
}
