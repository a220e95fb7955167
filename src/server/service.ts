/**
 * service — the transport-neutral limiter service: one configuration in force (limiters.ts: swapped whole on
 * reload), one store, a limiter per configured limit and native policy, and the request-supplied limits' budget
 * (overrides.ts). `decide` answers Envoy's RLS (gRPC and /json) as plan (plan.ts) → the library's all-or-nothing
 * decision → answer (answer.ts); `checkNow` the native API (/v1/check, /v1/auth). No rule logic here: the library decides.
 */
import type { Decision } from '../core/types.js';
import type { Limiter } from '../limiter.js';
import { checkAllSyncTrusted, checkAllTrusted, type CheckAllItem } from '../multi.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store } from '../stores/types.js';
import type { NativePolicy, ServiceConfig } from './config/types.js';
import { clientKeyOf } from './config/key.js';
import { finish } from './answer.js';
import { Limiters, type Prepared } from './limiters.js';
import type { Metrics } from './metrics.js';
import { Overrides } from './overrides.js';
import { plan, type Item } from './plan.js';
import { BadRequest, type RlsRequest, type RlsResponse } from './rls.js';
import { checkPolicyKey } from './runtime.js';

/** ServiceOptions — what the service decides with. */
export interface ServiceOptions {
  /** store — shared by every limit: the memory store (one instance) or a Redis store (a fleet). */
  store: Store;
  /** responseHeaders — add the IETF RateLimit-Policy / RateLimit fields (and Retry-After) to RLS responses. @default false */
  responseHeaders?: boolean;
  /** shadowMode — every limit decides and reports, but nothing is refused (envoy's global shadow mode). @default false */
  shadowMode?: boolean;
  /** denialCache — the library's local cache of refusals, per limit (where it is exact). @default false */
  denialCache?: boolean;
  /** metrics — where decisions are counted. */
  metrics?: Metrics;
  /** observe — every limiter remembers its heaviest clients and counts its decisions (the operators' view). @default false */
  observe?: boolean;
  /**
   * clock — when given, every decision is made at its `now()` (ms) instead of the store's clock (Redis TIME, or the
   * limiter's): tests and replays. @default the store's clock
   */
  clock?: { now(): number };
}

/**
 * RateLimitService — the transport-neutral service. `shouldRateLimit` answers Envoy's RLS (gRPC and /json), `check`
 * the native API (/v1/check). Both decide through the library: no rule logic here.
 */
export class RateLimitService {
  readonly store: Store;
  private readonly options: ServiceOptions;
  /** inForce — the configuration in force, its limiters and the reload machinery. */
  private readonly inForce: Limiters;
  /** overrides — limiters for request-supplied limits; at most MAX_OVERRIDES. */
  private readonly overrides: Overrides;
  /** sync — the store answers synchronously (the memory store): decisions are made without a promise per descriptor. */
  private readonly sync: boolean;

  constructor(options: ServiceOptions) {
    this.options = options;
    this.store = options.store;
    this.sync = options.store instanceof MemoryStore;
    this.inForce = new Limiters(options);
    this.overrides = new Overrides(options.store, options);
  }

  /** config — the configuration in force, or undefined before the first load. */
  get config(): ServiceConfig | undefined {
    return this.inForce.cfg;
  }

  /**
   * setConfig — puts a new configuration in force, at once and whole (Limiters.setConfig: a limit whose rules did not
   * change keeps its limiter and every client's state; one whose rules changed compatibly takes the old one's clients
   * over; the others start fresh). A reload of many limits uses {@link prepare} and {@link commit} instead.
   */
  setConfig(cfg: ServiceConfig): { kept: number; carried: number; fresh: number } {
    return this.inForce.setConfig(cfg);
  }

  /** prepare — builds what `cfg` needs in slices of `sliceMs` ms while the configuration in force serves (Limiters.prepare). */
  prepare(cfg: ServiceConfig, sliceMs?: number): Promise<Prepared> {
    return this.inForce.prepare(cfg, sliceMs);
  }

  /** commit — puts a prepared configuration in force in one synchronous step (Limiters.commit). */
  commit(prepared: Prepared): { kept: number; carried: number; fresh: number } {
    return this.inForce.commit(prepared);
  }

  /** settled — resolves once the takeovers of the latest commit are all done. */
  settled(): Promise<void> {
    return this.inForce.settled();
  }

  /** settle — finishes at once the takeovers a commit left to the sweep (another reload, the service closing). */
  settle(): void {
    this.inForce.settle();
  }

  /** dropRetired — retires for good every limiter kept for its grace period (the service is closing). */
  dropRetired(): void {
    this.inForce.dropRetired();
  }

  /** fields — the RateLimit-Policy and RateLimit fields of a native policy's decision. */
  fields(policyName: string, d: Decision): { policy: string; limit: string } | undefined {
    const r = this.inForce.policies.get(policyName);
    return r === undefined ? undefined : { policy: r.policyField, limit: r.writer.write(d) };
  }

  /**
   * limiters — every live limiter by a readable name (`limit:<limit id>`, `policy:<name>`), for the operators' view,
   * with how an operator's key is read for it: a limit whose descriptors have one entry takes the bare value
   * (`10.0.0.1` for `remote_address=10.0.0.1`, see clientKeyOf); a policy takes the key as its clients send it.
   */
  *limiters(): Iterable<[string, Limiter, ((key: string) => string) | undefined]> {
    for (const [id, r] of this.inForce.limits) yield [`limit:${id}`, r.limiter, clientKeyOf(id)];
    for (const [name, r] of this.inForce.policies) yield [`policy:${name}`, r.limiter, undefined];
  }

  /** policy — a native policy's limiter and configuration, or undefined. */
  policy(name: string): { limiter: Limiter; spec: NativePolicy } | undefined {
    const r = this.inForce.policies.get(name);
    const spec = this.inForce.cfg?.policies.get(name);
    return r === undefined || spec === undefined ? undefined : { limiter: r.limiter, spec };
  }

  /**
   * check — the native API: one request of `key` under the named policy. The limiter's namespace is the policy's
   * name, so two policies never share a client's state, and the operators see `key` as sent. Throws BadRequest for an
   * unknown policy or a bad key or cost.
   */
  check(policyName: string, key: string, cost: number): Promise<Decision> {
    try {
      const d = this.checkNow(policyName, key, cost);
      return d instanceof Promise ? d : Promise.resolve(d);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * checkNow — `check`, answered without a promise when the store is synchronous (the memory store). Throws on bad
   * input: a key too long for the store under the policy's name is a BadRequest naming `keyField` (the transport's
   * name of the key: `key` in /v1/check's body, `X-Ratekeeper-Key` for /v1/auth), before the policy is looked up.
   */
  checkNow(policyName: string, key: string, cost: number, keyField = 'key'): Decision | Promise<Decision> {
    checkPolicyKey(policyName, key, keyField);
    const p = this.inForce.policies.get(policyName);
    if (p === undefined) {
      const names = [...this.inForce.policies.keys()];
      throw new BadRequest('policy', `no policy ${JSON.stringify(policyName)} is configured${names.length ? ` (configured: ${names.slice(0, 20).map((n) => JSON.stringify(n)).join(', ')})` : ''}`);
    }
    const clock = this.options.clock;
    const options = clock === undefined ? { cost } : { cost, now: clock.now() };
    if (this.sync && p.limiter.denialCache === undefined) return this.counted(policyName, p.limiter.checkSync(key, options), cost);
    return p.limiter.check(key, options).then((d) => this.counted(policyName, d, cost));
  }

  private counted(policyName: string, d: Decision, cost: number): Decision {
    this.options.metrics?.decision('policy', policyName, d, cost);
    return d;
  }

  /**
   * shouldRateLimit — Envoy's ShouldRateLimit: every descriptor of the request decided all-or-nothing. Rejects with
   * BadRequest for a request it cannot decide (nothing is charged then).
   */
  shouldRateLimit(req: RlsRequest): Promise<RlsResponse> {
    try {
      const r = this.decide(req);
      return r instanceof Promise ? r : Promise.resolve(r);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** decide — `shouldRateLimit`, answered without a promise when the store is synchronous. Throws BadRequest. */
  decide(req: RlsRequest): RlsResponse | Promise<RlsResponse> {
    const p = plan(req, this.inForce.cfg, this.inForce.limits, this.overrides, this.options);
    if (p.live.length === 0) return finish(p, [], this.options);
    const now = this.options.clock?.now();
    const opts = now === undefined ? undefined : { now };
    // a live item is a check of its own limiter, key and cost (plan.ts checked the key's length and the cost): it is
    // handed to the all-or-nothing check as it is, which need not check them again (checkAllTrusted)
    let parts: CheckAllItem[] = p.refused
      // refused already (a requests_per_unit: 0 limit): the others are looked at, not charged
      ? p.live.map(toLook)
      : (p.live as CheckAllItem[]);
    if (p.guards !== undefined) {
      if (!p.refused) parts = parts.slice();
      for (const g of p.guards) parts.push({ limiter: g.limiter, key: g.key, cost: 0 });
    }
    if (this.sync) return finish(p, checkAllSyncTrusted(parts, opts).decisions, this.options);
    return checkAllTrusted(parts, opts).then((r) => finish(p, r.decisions, this.options));
  }
}

/** toLook — a live item as one part of the all-or-nothing check, looked at (cost 0). */
function toLook(it: Item): CheckAllItem {
  return { limiter: it.limiter!, key: it.key, cost: 0 };
}
