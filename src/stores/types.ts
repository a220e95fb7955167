import type { Decision, Override } from '../core/types.js';
import type { Policy } from '../core/policy.js';

/**
 * Store — where client state lives. A limiter attaches its policy once and then talks to the bound store.
 * Stores persist; the core decides (the memory store runs core/policy.ts in-process, the Redis store its Lua twin).
 */
export interface Store {
  /** attach — binds the store to one policy (one limiter). The same store may serve several limiters. */
  attach(policy: Policy): BoundStore;
  /** close — releases what the store holds open (timers, connections it owns). */
  close?(): Promise<void> | void;
}

/** OverrideRequest — a block or exemption to set: `for` in ms from now (Infinity: until lifted). */
export interface OverrideRequest {
  kind: Override['kind'];
  for: number;
  reason?: string;
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
}
