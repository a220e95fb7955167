/**
 * overrides — the limiters of request-supplied limits (a descriptor's own `limit`) and their budget: at most
 * MAX_OVERRIDES at once (envoy.ts), one not in use making room for a new one, a new one refused while every one is in
 * use. Kept apart from the configured limits: a reload neither keeps nor drops them, and the operators' view does not
 * list them.
 */
import { Limiter } from '../limiter.js';
import type { Store } from '../stores/types.js';
import { domainSpace } from './config/key.js';
import type { LimitSpec } from './config/types.js';
import { MAX_OVERRIDES } from './envoy.js';
import { BadRequest } from './rls.js';
import { retire, runtimeOf, type Runtime } from './runtime.js';

/**
 * OVERRIDE_SLACK — ms past the end of its last window before an override is idle: the limiter's clock (monotonic,
 * or Redis TIME) may run a little behind the wall clock the service reads here.
 */
const OVERRIDE_SLACK = 1000;

/** OverrideRuntime — a request-supplied limit's runtime: its window (ms, one fixed window of its unit) and its last check (ms). */
interface OverrideRuntime extends Runtime {
  per: number;
  lastUsed: number;
}

/** OverrideOptions — what an override's limiter is built with (the service's options). */
export interface OverrideOptions {
  shadowMode?: boolean;
  denialCache?: boolean;
  clock?: { now(): number };
}

/** Overrides — the request-supplied limits' limiters, by their LimitSpec id; at most MAX_OVERRIDES. */
export class Overrides {
  /** byId — every override kept, by LimitSpec id (size <= MAX_OVERRIDES). */
  private readonly byId = new Map<string, OverrideRuntime>();
  /** busyUntil — ms (wall clock) before which no override can be idle: every one was in use at the last look. */
  private busyUntil = 0;

  constructor(
    private readonly store: Store,
    private readonly options: OverrideOptions,
  ) {}

  /**
   * runtime — the limiter of a request-supplied limit (shared by every descriptor with the same limit: the key tells
   * the clients apart), for descriptor `i`. A new one past MAX_OVERRIDES takes the place of an idle one, or is
   * refused: an override is in use while the fixed window of its last check lasts (a client of it may not be fresh
   * yet), and is never evicted then. Override limiters are not observed (the operators' view lists configured limits).
   */
  runtime(spec: LimitSpec, i: number): Runtime {
    const now = this.options.clock?.now() ?? Date.now();
    let rt = this.byId.get(spec.id);
    if (rt !== undefined && rt.fingerprint === spec.fingerprint) {
      rt.lastUsed = now;
      return rt;
    }
    if (rt !== undefined) {
      retire(this.store, rt);
      this.byId.delete(spec.id);
    }
    if (this.byId.size >= MAX_OVERRIDES && !this.evictIdle(now)) {
      throw new BadRequest(`descriptors[${i}].limit`, `is one more distinct request limit than the ${MAX_OVERRIDES} in use; at most ${MAX_OVERRIDES} are kept at once (one in use stays until its window ends)`);
    }
    const limiter = new Limiter({ rules: [...spec.rules], store: this.store, dryRun: this.options.shadowMode === true, denialCache: this.options.denialCache === true, namespace: domainSpace(spec.domain) });
    const base = runtimeOf(limiter, spec.fingerprint);
    rt = { limiter, fingerprint: base.fingerprint, policyField: base.policyField, writer: base.writer, per: spec.rules[0].per, lastUsed: now };
    this.byId.set(spec.id, rt);
    return rt;
  }

  /**
   * evictIdle — retires one override whose last window ended (OVERRIDE_SLACK ago): every client of it is back to
   * fresh. False when there is none; then none can be before the soonest end seen, and until then a new override is
   * refused without looking again (a flood of new values costs one scan per window end, not per request).
   */
  private evictIdle(now: number): boolean {
    if (now < this.busyUntil) return false;
    let soonest = Infinity;
    for (const [id, rt] of this.byId) {
      const idleAt = (Math.floor(rt.lastUsed / rt.per) + 1) * rt.per + OVERRIDE_SLACK;
      if (idleAt <= now) {
        retire(this.store, rt);
        this.byId.delete(id);
        return true;
      }
      if (idleAt < soonest) soonest = idleAt;
    }
    this.busyUntil = soonest;
    return false;
  }
}
