import type { Decision } from '../core/types.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import { Limiter, MAX_KEY_LENGTH } from '../limiter.js';
import { MAX_AMOUNT } from '../core/rules.js';
import { formatDuration } from '../core/duration.js';
import { checkAll, checkAllSync, type CheckAllItem } from '../multi.js';
import { MemoryStore } from '../stores/memory.js';
import type { Store } from '../stores/types.js';
import { LimitFieldWriter, policyField, seconds } from '../http/headers.js';
import type { LimitSpec, Match, NativePolicy, RequestOverride, ServiceConfig } from './config/types.js';
import { BadRequest, UNIT_MS, checkDescriptorCount, duration, preview, type RlsDescriptor, type RlsRequest, type RlsResponse, type RlsStatus, type RlsUnit } from './rls.js';
import type { Metrics } from './metrics.js';
import { clientKeyOf, domainSpace } from './config/key.js';

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

/** Runtime — one configured limit or policy, live: its limiter and what its decisions are reported as. */
interface Runtime {
  limiter: Limiter;
  /** policyField — the RateLimit-Policy field of the limiter's rules (serialized once); writer — its RateLimit field. */
  policyField: string;
  writer: LimitFieldWriter;
  /** fingerprint — the rules' identity: a reload that keeps it keeps the limiter, and so every client's state. */
  fingerprint: string;
  /** successor — the limiter that took this one's clients over (a compatible rule change): this one is never revived. */
  successor?: Runtime;
}

/**
 * MAX_OVERRIDES — distinct request-supplied limits (descriptor.limit: one per domain, requests_per_unit and unit)
 * kept as limiters at once. Past it, one not in use makes room; when every one is in use, a new one is refused
 * (INVALID_ARGUMENT / 400 naming descriptors[i].limit) — never evicted, so no client of an override in use is
 * forgiven. Each is a table of the store bounded by its maxKeys: at most MAX_OVERRIDES × maxKeys clients in all.
 */
export const MAX_OVERRIDES = 256;
/**
 * OVERRIDE_SLACK — ms past the end of its last window before an override is idle: the limiter's clock (monotonic,
 * or Redis TIME) may run a little behind the wall clock the service reads here.
 */
const OVERRIDE_SLACK = 1000;
/** RETIRED_GRACE_MS — how long a limiter the configuration dropped is kept, for a limit that comes back (ms). */
export const RETIRED_GRACE_MS = 60_000;
/** MAX_RETIRED — the most dropped limiters kept at once (each idle one costs a few hundred bytes; its clients more). */
const MAX_RETIRED = 20_000;
/** PREPARE_SLICE_MS — the work `prepare` (and the takeover sweep after a commit) does between two turns of the event loop (ms). */
const PREPARE_SLICE_MS = 5;
/** LAZY — Limiter.succeed's options at commit: the takeover recorded, done at the successor's first call or by the sweep. */
const LAZY = { lazy: true } as const;

/** Sweep — the takeovers a commit left to do: the plan's todo, done from `next` on, a slice per turn. */
interface Sweep {
  todo: Todo[];
  next: number;
  /** done — resolves once every takeover is done (or another sweep or `settle` took over the rest). */
  done: Promise<void>;
}

/** Prepared — a configuration whose limiters are built, ready for `commit`. */
export interface Prepared {
  readonly cfg: ServiceConfig;
}

/**
 * Todo — a limiter to build for a plan: where it goes, its rules, the namespace and id of its clients' state, and the
 * limiter in force it replaces (`old`: its rules changed), whose clients it takes over at commit when compatible.
 */
interface Todo {
  into: Map<string, Runtime>;
  name: string;
  rules: readonly RuleConfig[];
  dryRun: boolean;
  /** autoBlock — a policy's automatic block (NativePolicy.autoBlock); envoy-format limits have none. */
  autoBlock?: { for: number; reason?: string };
  fingerprint: string;
  namespace: string;
  id: string;
  old: Runtime | undefined;
  built?: Runtime;
  /** carries — `built` can take over the clients of `old` (Limiter.carries, found while building, not at commit). */
  carries?: boolean;
}

/** ConfigPlan — a configuration being prepared: the limiters kept, those still to build (todo from `next` on), the counts. */
interface ConfigPlan extends Prepared {
  limits: Map<string, Runtime>;
  policies: Map<string, Runtime>;
  todo: Todo[];
  next: number;
  kept: number;
  fresh: number;
  /** carried — how many limiters in force a new one took the clients of at commit (their `successor` set). */
  carried: number;
  /** revived — the names whose limiter the plan takes back from the retired ones. */
  revived: string[];
  /** base — the configuration in force when the plan was made: while it still is, the plan's view of the limiters in force holds. */
  base: ServiceConfig | undefined;
  /** dropped — the limiters in force (with their names) that the plan neither keeps nor replaces. */
  dropped: [string, Runtime][];
}

const MAX_UINT32 = 0xffffffff;
/** NEAR_LIMIT_RATIO — envoy's: a hit past this share of the limit counts as near the limit in the metrics. */
export const NEAR_LIMIT_RATIO = 0.8;

/** OverrideRuntime — a request-supplied limit's runtime: its window (ms, one fixed window of its unit) and its last check (ms). */
interface OverrideRuntime extends Runtime {
  per: number;
  lastUsed: number;
}

/** Plan — a request's descriptors: the statuses answered already, and the items still to decide. */
interface Plan {
  domain: string;
  statuses: RlsStatus[];
  live: Item[];
  /** refused — a descriptor refused it already (a deny-all limit): the live items are only looked at. */
  refused: boolean;
  /**
   * guards — for a descriptor with its own limit that also matches a configured limit, that limit's client, looked at
   * (cost 0) in the same all-or-nothing decision: an operator's block or exemption of the client holds whatever
   * limit the request carries (a block refuses the request and charges nothing; an exemption answers OK).
   */
  guards: Guard[] | undefined;
}

/** Guard — a configured limit's client looked at for its block or exemption (see Plan.guards). */
interface Guard {
  index: number;
  limiter: Limiter;
  key: string;
}

function remainingOf(d: Decision): number {
  return Math.min(MAX_UINT32, Math.max(0, Math.floor(d.remaining)));
}

/** Item — one descriptor to decide. */
interface Item {
  index: number;
  limiter: Limiter;
  rt: Runtime;
  key: string;
  cost: number;
  spec: LimitSpec | undefined;
  report: { name?: string; requests_per_unit: number; unit: RlsUnit };
  metricKey: string;
  /** fromRequest — metricKey holds request values (detailed_metric, value_to_metric): it counts against the metrics' series cap. */
  fromRequest: boolean;
  /** own — the request's own limit (descriptor.limit), not a configured one. */
  own: boolean;
}

/** Denied — a descriptor matched to a requests_per_unit: 0 limit: answered in the plan, counted in the metrics. */
interface Denied {
  index: number;
  name: string | undefined;
  spec: LimitSpec;
  metricKey: string;
  fromRequest: boolean;
  cost: number;
  shadow: boolean;
}

/**
 * OVERRIDE_RULE — the rule label of a request's own limit in the metrics: its rule's name (`9/1h`) holds the
 * client's requests_per_unit, and a label must not (every value would be a new series).
 */
const OVERRIDE_RULE = 'request_limit';

/**
 * RateLimitService — the transport-neutral service: one configuration (swapped whole on reload), one store, a
 * limiter per configured limit and native policy. `shouldRateLimit` answers Envoy's RLS (gRPC and /json), `check`
 * the native API (/v1/check). Both decide through the library: no rule logic here.
 */
export class RateLimitService {
  readonly store: Store;
  private readonly options: ServiceOptions;
  private cfg: ServiceConfig | undefined;
  /** limits — by LimitSpec id; policies — by native policy name. Rebuilt on every config, reusing same-fingerprint limiters. */
  private limits = new Map<string, Runtime>();
  private policies = new Map<string, Runtime>();
  /** overrides — limiters for request-supplied limits, by their LimitSpec id; at most MAX_OVERRIDES. */
  private readonly overrides = new Map<string, OverrideRuntime>();
  /** overridesBusyUntil — ms (wall clock) before which no override can be idle: every one was in use at the last look. */
  private overridesBusyUntil = 0;
  /**
   * retired — limiters the configuration dropped, by `limit:<id>` / `policy:<name>`, oldest first, with when (ms):
   * within RETIRED_GRACE_MS a limit that comes back with the same rules takes its limiter back. At most MAX_RETIRED.
   */
  private readonly retired = new Map<string, { runtime: Runtime; at: number }>();

  /** sync — the store answers synchronously (the memory store): decisions are made without a promise per descriptor. */
  private readonly sync: boolean;

  constructor(options: ServiceOptions) {
    this.options = options;
    this.store = options.store;
    this.sync = options.store instanceof MemoryStore;
  }

  /** config — the configuration in force, or undefined before the first load. */
  get config(): ServiceConfig | undefined {
    return this.cfg;
  }

  /**
   * setConfig — puts a new configuration in force, at once and whole. A limit or policy whose rules did not change
   * keeps its limiter, and with it every client's state (see {@link reuse}); one whose rules changed compatibly gets a
   * limiter that takes over the old one's clients at the swap (converted to the new rules: Limiter.succeed); the others
   * start fresh. Builds every new limiter, and takes every client over, in this one call: a reload of many limits
   * uses {@link prepare} and {@link commit} instead.
   */
  setConfig(cfg: ServiceConfig): { kept: number; carried: number; fresh: number } {
    this.settle();
    const plan = this.planConfig(cfg);
    while (plan.next < plan.todo.length) this.build(plan, Infinity);
    const counts = this.commit(plan);
    this.settle(); // every takeover in this call too: setConfig is the one-step path
    return counts;
  }

  /**
   * prepare — builds what `cfg` needs (the limiters of its new limits) while the configuration in force keeps
   * serving: in slices of at most `sliceMs` ms of work, each followed by a turn of the event loop (setImmediate), so
   * that no check waits behind a reload for more than about one slice. `commit` then puts it in force in one step.
   * Only one prepared configuration may be pending at a time (the reloads are serialized by the caller).
   */
  async prepare(cfg: ServiceConfig, sliceMs = PREPARE_SLICE_MS): Promise<Prepared> {
    // the takeovers of the previous commit are done first: the plan compares with limiters that own their clients
    await this.sweep?.done;
    const plan = this.planConfig(cfg);
    while (plan.next < plan.todo.length) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      this.build(plan, sliceMs);
    }
    return plan;
  }

  /**
   * commit — puts a prepared configuration in force, in one synchronous step: each new limiter whose limit's rules
   * changed compatibly is made the successor of the one it replaces (built while the old one served, it takes its
   * clients only after the swap, so no client's state is converted while the old rules still decide), the limits'
   * and policies' maps are swapped, and the limiters the new configuration no longer uses are retired (kept for
   * RETIRED_GRACE_MS, so that a limit that comes back with the same rules finds its clients' state; not those whose
   * clients moved). A limiter retired meanwhile (by an earlier commit since `prepare`) that the plan reuses is taken
   * back from the retired ones.
   *
   * The takeover itself (Limiter.succeed, lazy: every client converted to the new rules as of the commit) is not done
   * in this step, whose work is then a few map operations per limit (10 000 changed limits: a few ms, not 50–250):
   * each successor takes its clients over at its first call, and a sweep does the rest in slices of
   * PREPARE_SLICE_MS, one per turn of the event loop, retiring each old limiter once its clients have moved.
   */
  commit(prepared: Prepared): { kept: number; carried: number; fresh: number } {
    const plan = prepared as ConfigPlan;
    while (plan.next < plan.todo.length) this.build(plan, Infinity);
    this.settle();
    const now = Date.now();
    if (plan.base === this.cfg) {
      // nothing committed since the plan: its `old` are the limiters in force, its `dropped` the others to retire (a
      // limiter whose clients move to a successor is retired by the sweep, once they have moved)
      for (const t of plan.todo) {
        const old = t.old;
        if (old === undefined) continue;
        if (t.carries === true && t.built!.limiter.succeed(old.limiter, LAZY)) {
          old.successor = t.built;
          plan.carried++;
        } else {
          this.retireLater(t.id, old, now);
        }
      }
      for (const [name, r] of plan.dropped) this.retireLater(name, r, now);
    } else {
      for (const t of plan.todo) {
        // the limiter it replaces must still be the one in force (a commit since prepare may have replaced it)
        const inForce = t.into === plan.limits ? this.limits.get(t.name) : this.policies.get(t.name);
        if (t.old !== undefined && t.old === inForce && t.built!.limiter.succeed(t.old.limiter, LAZY)) {
          t.old.successor = t.built;
          plan.carried++;
        }
      }
      // a limiter is only ever reused under its own name: one lookup per old name tells whether it is still in use
      for (const [id, r] of this.limits) if (r.successor === undefined && plan.limits.get(id) !== r) this.retireLater(`limit:${id}`, r, now);
      for (const [name, r] of this.policies) if (r.successor === undefined && plan.policies.get(name) !== r) this.retireLater(`policy:${name}`, r, now);
    }
    for (const name of plan.revived) this.retired.delete(name);
    this.sweepRetired(now);
    this.limits = plan.limits;
    this.policies = plan.policies;
    this.cfg = plan.cfg;
    if (plan.carried > 0) this.startSweep(plan.todo);
    return { kept: plan.kept, carried: plan.carried, fresh: plan.fresh - plan.carried };
  }

  /** sweep — the takeovers the latest commit left to do, while they last. */
  private sweep: Sweep | undefined;

  /** startSweep — the takeovers of `todo` (those whose old limiter has its limiter as successor), a slice per turn. */
  private startSweep(todo: Todo[]): void {
    const job: Sweep = { todo, next: 0, done: Promise.resolve() };
    this.sweep = job;
    job.done = (async () => {
      while (this.sweep === job && job.next < todo.length) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (this.sweep === job) this.takeOvers(job, PREPARE_SLICE_MS);
      }
      if (this.sweep === job) this.sweep = undefined;
    })();
  }

  /** takeOvers — the sweep's next takeovers until `budgetMs` of work is spent: each successor settled, its old limiter retired. */
  private takeOvers(job: Sweep, budgetMs: number): void {
    const end = budgetMs === Infinity ? Infinity : performance.now() + budgetMs;
    const todo = job.todo;
    while (job.next < todo.length) {
      const t = todo[job.next++];
      const old = t.old;
      if (old === undefined || old.successor !== t.built) continue;
      t.built!.limiter.settle();
      this.retire(old);
      if (end !== Infinity && performance.now() >= end) break;
    }
  }

  /** settled — resolves once the takeovers of the latest commit are all done (by the sweep or by `settle`). */
  settled(): Promise<void> {
    return this.sweep?.done ?? Promise.resolve();
  }

  /** settle — finishes at once the takeovers a commit left to the sweep (another reload, the service closing). */
  settle(): void {
    const job = this.sweep;
    if (job === undefined) return;
    this.sweep = undefined;
    this.takeOvers(job, Infinity);
  }

  /** plan_ — what `cfg` keeps and what it must build, decided against the configuration in force. */
  private planConfig(cfg: ServiceConfig): ConfigPlan {
    const plan: ConfigPlan = { cfg, limits: new Map(), policies: new Map(), todo: [], next: 0, kept: 0, fresh: 0, revived: [], carried: 0, base: this.cfg, dropped: [] };
    for (const spec of cfg.limits) {
      if (spec.unlimited || spec.rules.length === 0) continue;
      const old = this.limits.get(spec.id);
      const r = this.reuse(`limit:${spec.id}`, old, `${spec.fingerprint}|${spec.shadowMode}`);
      if (r !== undefined) {
        if (r !== old) plan.revived.push(`limit:${spec.id}`);
        plan.limits.set(spec.id, r);
        plan.kept++;
      } else {
        plan.todo.push({ into: plan.limits, name: spec.id, rules: spec.rules, dryRun: spec.shadowMode, fingerprint: `${spec.fingerprint}|${spec.shadowMode}`, namespace: domainSpace(spec.domain), id: `limit:${spec.id}`, old });
      }
    }
    for (const p of cfg.policies.values()) {
      const old = this.policies.get(p.name);
      const fingerprint = `${p.fingerprint}|${p.dryRun}${p.autoBlock === undefined ? '' : `|${JSON.stringify(p.autoBlock)}`}`;
      const r = this.reuse(`policy:${p.name}`, old, fingerprint);
      if (r !== undefined) {
        if (r !== old) plan.revived.push(`policy:${p.name}`);
        plan.policies.set(p.name, r);
        plan.kept++;
      } else {
        plan.todo.push({ into: plan.policies, name: p.name, rules: p.rules, dryRun: p.dryRun, autoBlock: p.autoBlock, fingerprint, namespace: policyKey(p.name, ''), id: `policy:${p.name}`, old });
      }
    }
    plan.fresh = plan.todo.length;
    // the limiters in force that the plan drops, found now rather than at commit (where every one would be looked at)
    const replaced = new Set<Runtime>();
    for (const t of plan.todo) if (t.old !== undefined) replaced.add(t.old);
    for (const [id, r] of this.limits) if (plan.limits.get(id) !== r && !replaced.has(r)) plan.dropped.push([`limit:${id}`, r]);
    for (const [name, r] of this.policies) if (plan.policies.get(name) !== r && !replaced.has(r)) plan.dropped.push([`policy:${name}`, r]);
    return plan;
  }

  /**
   * reuse — the one place that decides whether a limit of the new configuration keeps a limiter (and so its clients'
   * state): the limiter in force under the same name when its rules' fingerprint is the same, else one retired within
   * the grace period with that fingerprint; undefined: a fresh limiter is built.
   */
  private reuse(name: string, old: Runtime | undefined, fingerprint: string): Runtime | undefined {
    if (old !== undefined && old.fingerprint === fingerprint) return old;
    const retired = this.retired.get(name);
    if (retired !== undefined && retired.runtime.fingerprint === fingerprint) return retired.runtime;
    return undefined;
  }

  /** build — builds the plan's next limiters until `budgetMs` of work is spent (at least one). */
  private build(plan: ConfigPlan, budgetMs: number): void {
    const end = budgetMs === Infinity ? Infinity : performance.now() + budgetMs;
    do {
      const t = plan.todo[plan.next++];
      t.built = this.runtime(t.rules, t.dryRun, t.fingerprint, t.namespace, t.id, t.autoBlock);
      t.into.set(t.name, t.built);
      if (t.old !== undefined) t.carries = t.built.limiter.carries(t.old.limiter);
    } while (plan.next < plan.todo.length && (end === Infinity || performance.now() < end));
  }

  /**
   * runtime — the limiter of a limit or policy. Its clients are keyed as the clients send them (a policy's `key`, a
   * descriptor's entries); `namespace` (the policy's `<length>:<name>:`, the limit's `domain:`) is where the store
   * keeps them apart. `id` — the limit's or policy's name for its state in a shared store (Limiter `id`): on Redis
   * every instance, whatever rules it holds for the limit, reads and writes one state per client, so a rule change
   * (commit: Limiter.succeed) carries every client's state, block and exemption over, judged by the new rules —
   * lowering a limit during an attack does not forgive the attackers.
   */
  private runtime(rules: readonly RuleConfig[], dryRun: boolean, fingerprint: string, namespace: string, id?: string, autoBlock?: { for: number; reason?: string }): Runtime {
    const clock = this.options.clock;
    const limiter = new Limiter({
      rules: [...rules], store: this.store, dryRun: dryRun || this.options.shadowMode === true, denialCache: this.options.denialCache === true,
      observe: this.options.observe === true, id, namespace, ...(clock === undefined ? {} : { clock: { now: () => clock.now() } }),
      ...(autoBlock === undefined ? {} : { autoBlock }),
    });
    return { limiter, fingerprint, policyField: policyField(limiter.policy.rules, undefined), writer: new LimitFieldWriter(limiter.policy.rules), successor: undefined };
  }

  /**
   * retireLater — a limiter the configuration no longer uses: kept, with its clients' state, for RETIRED_GRACE_MS
   * under its name (a config rewritten in two steps that drops a limit and brings it back finds it), at most
   * MAX_RETIRED of them (the oldest retired for good first).
   */
  private retireLater(name: string, r: Runtime, now: number): void {
    const prior = this.retired.get(name);
    if (prior !== undefined && prior.runtime !== r) this.retire(prior.runtime);
    this.retired.delete(name);
    this.retired.set(name, { runtime: r, at: now });
  }

  /** sweepRetired — retires for good the limiters past their grace period, and the oldest past MAX_RETIRED. */
  private sweepRetired(now: number): void {
    for (const [name, r] of this.retired) {
      if (now - r.at < RETIRED_GRACE_MS && this.retired.size <= MAX_RETIRED) break;
      this.retired.delete(name);
      this.retire(r.runtime);
    }
  }

  /** dropRetired — retires for good every limiter kept for its grace period (the service is closing). */
  dropRetired(): void {
    this.settle();
    for (const r of this.retired.values()) this.retire(r.runtime);
    this.retired.clear();
  }

  /**
   * retire — a limiter the configuration no longer uses: it stops sharing its observations (a timer, on Redis) and
   * the store forgets its in-process table (the memory store; Redis keys expire on their own).
   */
  private retire(r: Runtime): void {
    r.limiter.settle(); // its own clients taken over first (a pending takeover), so that they are forgotten with it
    r.limiter.sharing?.stop();
    this.store.detach?.(r.limiter.policy);
  }

  /** headers — the RateLimit-Policy and RateLimit fields of a native policy's decision. */
  fields(policyName: string, d: Decision): { policy: string; limit: string } | undefined {
    const r = this.policies.get(policyName);
    return r === undefined ? undefined : { policy: r.policyField, limit: r.writer.write(d) };
  }

  /**
   * limiters — every live limiter by a readable name (`limit:<limit id>`, `policy:<name>`), for the operators' view,
   * with how an operator's key is read for it: a limit whose descriptors have one entry takes the bare value
   * (`10.0.0.1` for `remote_address=10.0.0.1`, see clientKeyOf); a policy takes the key as its clients send it.
   */
  *limiters(): Iterable<[string, Limiter, ((key: string) => string) | undefined]> {
    for (const [id, r] of this.limits) yield [`limit:${id}`, r.limiter, clientKeyOf(id)];
    for (const [name, r] of this.policies) yield [`policy:${name}`, r.limiter, undefined];
  }

  /** policy — a native policy's limiter and configuration, or undefined. */
  policy(name: string): { limiter: Limiter; spec: NativePolicy } | undefined {
    const r = this.policies.get(name);
    const spec = this.cfg?.policies.get(name);
    return r === undefined || spec === undefined ? undefined : { limiter: r.limiter, spec };
  }

  /**
   * check — the native API: one request of `key` under the named policy. The limiter's namespace is the policy's
   * name, so two policies never share a client's state, and the operators see `key` as sent. Throws BadRequest for an unknown policy or a bad key or cost.
   */
  check(policyName: string, key: string, cost: number): Promise<Decision> {
    try {
      const d = this.checkNow(policyName, key, cost);
      return d instanceof Promise ? d : Promise.resolve(d);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** checkNow — `check`, answered without a promise when the store is synchronous (the memory store). Throws on bad input. */
  checkNow(policyName: string, key: string, cost: number): Decision | Promise<Decision> {
    const p = this.policies.get(policyName);
    if (p === undefined) {
      const names = [...this.policies.keys()];
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
    const plan = this.plan(req);
    if (plan.live.length === 0) return this.finish(plan, []);
    const now = this.options.clock?.now();
    const opts = now === undefined ? undefined : { now };
    const parts = plan.refused
      // refused already (a requests_per_unit: 0 limit): the others are looked at, not charged
      ? plan.live.map((it) => ({ limiter: it.limiter, key: it.key, cost: 0 }))
      : plan.live.map(toCheck);
    if (plan.guards !== undefined) for (const g of plan.guards) parts.push({ limiter: g.limiter, key: g.key, cost: 0 });
    if (this.sync) return this.finish(plan, checkAllSync(parts, opts).decisions);
    return checkAll(parts, opts).then((r) => this.finish(plan, r.decisions));
  }

  /** plan — what a request asks: each descriptor matched to its limit, or answered already (no limit, unlimited, deny-all). */
  private plan(req: RlsRequest): Plan {
    const cfg = this.cfg;
    const domain = req.domain ?? '';
    if (domain === '') throw new BadRequest('domain', 'must not be empty');
    const descriptors = req.descriptors ?? [];
    if (descriptors.length === 0) throw new BadRequest('descriptors', 'must not be empty');
    checkDescriptorCount(descriptors.length);
    const base = req.hits_addend !== undefined && req.hits_addend > 0 ? req.hits_addend : 1;
    const statuses = new Array<RlsStatus>(descriptors.length);
    const items: Item[] = [];
    /** total — the items' summed cost: past MAX_AMOUNT, some state may be asked for more than a cost can be. */
    let total = 0;
    let replacing: Set<string> | undefined;
    let denied: Denied[] | undefined;
    let guards: Guard[] | undefined;
    const known = cfg !== undefined && cfg.hasDomain(domain);
    for (let i = 0; i < descriptors.length; i++) {
      const d = descriptors[i];
      const entries = d.entries ?? [];
      // the key cap before any matching: a 3 MB value was walked against every wildcard of its key first
      const least = leastKeyLength(domain, entries);
      if (least > MAX_KEY_LENGTH) throw keyTooLong(i, least);
      const cost = hits(d, base, i);
      const own = d.limit !== undefined && d.limit !== null;
      let m: Match | undefined;
      if (own) {
        const o = overrideOf(d, i);
        if (known) {
          m = cfg.override(domain, entries, o);
          const base = m === undefined ? undefined : cfg.match(domain, entries);
          const brt = base === undefined || base.limit.unlimited || base.limit.denyAll ? undefined : this.limits.get(base.limit.id);
          if (brt !== undefined && base !== undefined) (guards ??= []).push({ index: i, limiter: brt.limiter, key: base.client });
        }
      } else if (known) {
        m = cfg.match(domain, entries);
      }
      if (m === undefined) {
        statuses[i] = { code: 'OK', limit_remaining: 0 };
        continue;
      }
      const spec = m.limit;
      if (spec.replaces.length > 0) for (const r of spec.replaces) (replacing ??= new Set()).add(r);
      if (spec.unlimited) {
        statuses[i] = { code: 'OK', limit_remaining: MAX_UINT32 };
        continue;
      }
      if (spec.denyAll) {
        // hits_addend 0 only looks, and a look at a requests_per_unit: 0 limit is within it (0 + 0 <= 0), as in envoy
        if (cost === 0) {
          statuses[i] = { code: 'OK', current_limit: reportOf(spec), limit_remaining: 0, duration_until_reset: duration(windowLeft(spec, this.options.clock?.now() ?? Date.now())) };
          continue;
        }
        // requests_per_unit 0: every hit is over (envoy's "black list"); not charged, so nothing to decide
        const shadow = spec.shadowMode || this.options.shadowMode === true;
        (denied ??= []).push({ index: i, name: spec.name, spec, metricKey: m.metricKey, fromRequest: m.metricKey !== spec.path, cost, shadow });
        statuses[i] = { code: shadow ? 'OK' : 'OVER_LIMIT', current_limit: reportOf(spec), limit_remaining: 0, duration_until_reset: duration(windowLeft(spec, this.options.clock?.now() ?? Date.now())) };
        continue;
      }
      const rt = own ? this.overrideRuntime(spec, i) : this.limits.get(spec.id);
      if (rt === undefined) {
        statuses[i] = { code: 'OK', limit_remaining: 0 };
        continue;
      }
      // escaping (`%XX`) can lengthen a key under the cap as sent past it
      if (m.key.length > MAX_KEY_LENGTH) throw keyTooLong(i, m.key.length);
      total += cost;
      // a metric key other than the config path holds request values (a config path never does)
      items.push({ index: i, limiter: rt.limiter, rt, key: m.client, cost, spec, report: reportOf(spec), metricKey: m.metricKey, fromRequest: m.metricKey !== spec.path, own });
    }
    if (total > MAX_AMOUNT) checkTotals(items);
    let live = items;
    if (replacing !== undefined) {
      const r = replacing;
      live = [];
      for (const it of items) {
        if (it.spec?.name !== undefined && r.has(it.spec.name)) statuses[it.index] = { code: 'OK', limit_remaining: 0 };
        else live.push(it);
      }
      if (denied !== undefined) for (const x of denied) if (x.name !== undefined && r.has(x.name)) statuses[x.index] = { code: 'OK', limit_remaining: 0 };
    }
    let refused = false;
    for (const s of statuses) if (s !== undefined && s.code === 'OVER_LIMIT') refused = true;
    const metrics = this.options.metrics;
    if (metrics !== undefined && denied !== undefined) {
      for (const x of denied) {
        if (x.name !== undefined && replacing?.has(x.name) === true) continue;
        metrics.refused(domain, x.metricKey, x.name ?? denyRuleName(x.spec), x.cost, x.shadow, x.fromRequest);
      }
    }
    return { domain, statuses, live, refused, guards };
  }

  /** finish — the response from the plan and the live descriptors' decisions. */
  private finish(plan: Plan, decisions: Decision[]): RlsResponse {
    const { statuses, live } = plan;
    let overall: RlsResponse['overall_code'] = plan.refused ? 'OVER_LIMIT' : 'OK';
    for (let j = 0; j < live.length; j++) {
      const it = live[j];
      const dec = decisions[j];
      if (plan.refused) {
        statuses[it.index] = { code: 'OK', current_limit: it.report, limit_remaining: remainingOf(dec), duration_until_reset: duration(dec.resetAfter) };
        continue;
      }
      const over = !dec.allowed;
      if (over) overall = 'OVER_LIMIT';
      statuses[it.index] = {
        code: over ? 'OVER_LIMIT' : 'OK',
        current_limit: it.report,
        limit_remaining: over ? 0 : remainingOf(dec),
        duration_until_reset: duration(over ? finite(dec.retryAfter, dec.resetAfter) : dec.resetAfter),
      };
      this.options.metrics?.decision(plan.domain, it.metricKey, dec, it.cost, it.own ? OVERRIDE_RULE : undefined, it.fromRequest);
    }
    if (plan.guards !== undefined) {
      // the configured limit's block or exemption of the client decides its descriptor, whatever limit it carried
      for (let j = 0; j < plan.guards.length; j++) {
        const g = plan.guards[j];
        const dec = decisions[live.length + j];
        if (dec === undefined || (dec.reason !== 'blocked' && dec.reason !== 'exempt')) continue;
        const prev = statuses[g.index];
        statuses[g.index] = dec.reason === 'blocked'
          ? { code: 'OVER_LIMIT', current_limit: prev?.current_limit, limit_remaining: 0, duration_until_reset: prev?.duration_until_reset }
          : { code: 'OK', current_limit: prev?.current_limit, limit_remaining: prev?.limit_remaining ?? 0, duration_until_reset: prev?.duration_until_reset };
      }
      overall = 'OK';
      for (const st of statuses) if (st !== undefined && st.code === 'OVER_LIMIT') overall = 'OVER_LIMIT';
    }
    const response: RlsResponse = { overall_code: overall, statuses, response_headers_to_add: [] };
    if (this.options.responseHeaders === true) {
      if (plan.refused) response.response_headers_to_add = deniedHeaders(statuses);
      else if (live.length > 0) response.response_headers_to_add = headersFor(live, plan.guards === undefined ? decisions : decisions.slice(0, live.length), this.options.shadowMode === true);
    }
    return response;
  }

  /**
   * overrideRuntime — the limiter of a request-supplied limit (shared by every descriptor with the same limit: the
   * key tells the clients apart). A new one past MAX_OVERRIDES takes the place of an idle one, or is refused: an
   * override is in use while the fixed window of its last check lasts (a client of it may not be fresh yet), and is
   * never evicted then. Override limiters are not observed (the operators' view lists configured limits only).
   */
  private overrideRuntime(spec: LimitSpec, i: number): Runtime {
    const now = this.options.clock?.now() ?? Date.now();
    let rt = this.overrides.get(spec.id);
    if (rt !== undefined && rt.fingerprint === spec.fingerprint) {
      rt.lastUsed = now;
      return rt;
    }
    if (rt !== undefined) {
      this.retire(rt);
      this.overrides.delete(spec.id);
    }
    if (this.overrides.size >= MAX_OVERRIDES && !this.evictIdleOverride(now)) {
      throw new BadRequest(`descriptors[${i}].limit`, `is one more distinct request limit than the ${MAX_OVERRIDES} in use; at most ${MAX_OVERRIDES} are kept at once (one in use stays until its window ends)`);
    }
    const limiter = new Limiter({ rules: [...spec.rules], store: this.store, dryRun: this.options.shadowMode === true, denialCache: this.options.denialCache === true, namespace: domainSpace(spec.domain) });
    rt = {
      limiter, fingerprint: spec.fingerprint, policyField: policyField(limiter.policy.rules, undefined), writer: new LimitFieldWriter(limiter.policy.rules),
      per: spec.rules[0].per, lastUsed: now,
    };
    this.overrides.set(spec.id, rt);
    return rt;
  }

  /**
   * evictIdleOverride — retires one override whose last window ended (OVERRIDE_SLACK ago): every client of it is
   * back to fresh. False when there is none; then none can be before the soonest end seen, and until then a new
   * override is refused without looking again (a flood of new values costs one scan per window end, not per request).
   */
  private evictIdleOverride(now: number): boolean {
    if (now < this.overridesBusyUntil) return false;
    let soonest = Infinity;
    for (const [id, rt] of this.overrides) {
      const idleAt = (Math.floor(rt.lastUsed / rt.per) + 1) * rt.per + OVERRIDE_SLACK;
      if (idleAt <= now) {
        this.retire(rt);
        this.overrides.delete(id);
        return true;
      }
      if (idleAt < soonest) soonest = idleAt;
    }
    this.overridesBusyUntil = soonest;
    return false;
  }
}

/**
 * leastKeyLength — the fewest characters the store key of a descriptor can have: the domain, `:`, and every entry's
 * key, `=` and value, joined by `&` — the key ({@link descriptorKey}) before its escapes, which only lengthen it. So a
 * descriptor past MAX_KEY_LENGTH here would make a key past it too, and is refused before it is matched, while every
 * key under the cap passes as before. The cap bounds the sum of a descriptor's entries (with the domain), not each
 * entry alone.
 */
function leastKeyLength(domain: string, entries: readonly { key: string; value: string }[]): number {
  let n = domain.length + 2 * entries.length;
  for (let j = 0; j < entries.length; j++) n += entries[j].key.length + entries[j].value.length;
  return n;
}

/** keyTooLong — the BadRequest of a descriptor whose key would have `n` characters (before escapes, for a count made before matching). */
function keyTooLong(i: number, n: number): BadRequest {
  return new BadRequest(`descriptors[${i}].entries`, `make a key of ${n} characters; at most ${MAX_KEY_LENGTH} are accepted (the domain and every entry's key and value)`);
}

function toCheck(it: Item): CheckAllItem {
  return { limiter: it.limiter, key: it.key, cost: it.cost };
}

/**
 * hits — a descriptor's cost, as envoyproxy/ratelimit's GetHitsAddends: its own hits_addend as is when set — 0 too,
 * "check without charging" — else the request's (`base`: 0 or unset there means 1). A google.protobuf.UInt64Value
 * set to 0 is sent as an empty message, which proto-loader decodes as `{}` (no `value`): set, and 0.
 */
function hits(d: RlsDescriptor, base: number, i: number): number {
  const h = d.hits_addend;
  if (h === undefined || h === null) return base;
  const v = typeof h.value === 'string' ? Number(h.value) : h.value ?? 0;
  if (!Number.isSafeInteger(v) || v < 0 || v > MAX_AMOUNT) throw new BadRequest(`descriptors[${i}].hits_addend`, `must be an integer from 0 to ${MAX_AMOUNT}, got ${preview(h.value)}`);
  return v;
}

/**
 * checkTotals — throws a BadRequest naming the descriptor at which one state (a limiter and a key: duplicate
 * descriptors are one request of their summed cost) is asked for more than MAX_AMOUNT, before anything is charged.
 */
function checkTotals(items: readonly Item[]): void {
  const sums = new Map<Limiter, Map<string, number>>();
  for (const it of items) {
    let byKey = sums.get(it.limiter);
    if (byKey === undefined) sums.set(it.limiter, (byKey = new Map()));
    const sum = (byKey.get(it.key) ?? 0) + it.cost;
    if (sum > MAX_AMOUNT) throw new BadRequest(`descriptors[${it.index}].hits_addend`, `makes ${sum} hits on one limit and client in this request; at most ${MAX_AMOUNT} are accepted`);
    byKey.set(it.key, sum);
  }
}

/** reportOf — how a configured limit appears as current_limit. */
function reportOf(spec: LimitSpec): Item['report'] {
  const r = spec.report;
  const out: Item['report'] = { requests_per_unit: r?.requestsPerUnit ?? Math.floor(spec.rules[0].limit), unit: r?.unit ?? 'UNKNOWN' };
  if (spec.name !== undefined) out.name = spec.name;
  return out;
}

/** UNIT_NAMES — envoy's RateLimit.Unit by number. */
const UNIT_NAMES: readonly RlsUnit[] = ['UNKNOWN', 'SECOND', 'MINUTE', 'HOUR', 'DAY', 'MONTH', 'YEAR', 'WEEK'];

/** overrideOf — a descriptor's own limit as the config's matcher takes it. */
function overrideOf(d: RlsDescriptor, i: number): RequestOverride {
  const o = d.limit!;
  const rpu = o.requests_per_unit ?? 0;
  if (!Number.isInteger(rpu) || rpu < 0 || rpu > MAX_UINT32) throw new BadRequest(`descriptors[${i}].limit.requests_per_unit`, `must be an integer from 0 to ${MAX_UINT32}, got ${rpu}`);
  // a known unit arrives by name (proto-loader's enums: String); a number here is one the proto does not know
  const unit = typeof o.unit === 'number' ? UNIT_NAMES[o.unit] : o.unit;
  if (unit === undefined || !Object.hasOwn(UNIT_MS, unit)) {
    throw new BadRequest(`descriptors[${i}].limit.unit`, `must be a known unit (SECOND … YEAR, WEEK), got ${JSON.stringify(o.unit ?? 'UNKNOWN')}`);
  }
  return { requestsPerUnit: rpu, unit };
}

/** denyRuleName — the rule label of an unnamed requests_per_unit: 0 limit: `0/1m` (or `0` without a unit). */
function denyRuleName(spec: LimitSpec): string {
  const unit = spec.report?.unit;
  return unit === undefined || unit === 'UNKNOWN' ? '0' : `0/${formatDuration(UNIT_MS[unit])}`;
}

/** windowLeft — ms until the end of the current window of a limit reported in a unit (a fixed window's reset). */
function windowLeft(spec: LimitSpec, now: number): number {
  const unit = spec.report?.unit;
  if (unit === undefined || unit === 'UNKNOWN') return 0;
  const per = UNIT_MS[unit];
  return per - (now % per);
}

function finite(ms: number, otherwise: number): number {
  return ms < Infinity ? ms : otherwise < Infinity ? otherwise : 0;
}

/** deniedHeaders — a request refused by a requests_per_unit: 0 limit: Retry-After until that limit's window ends. */
function deniedHeaders(statuses: RlsStatus[]): RlsResponse['response_headers_to_add'] {
  let wait = 0;
  for (const st of statuses) {
    if (st?.code !== 'OVER_LIMIT' || st.duration_until_reset === undefined) continue;
    wait = Math.max(wait, st.duration_until_reset.seconds * 1000 + st.duration_until_reset.nanos / 1e6);
  }
  const s = seconds(wait);
  return s === undefined || s === 0 ? [] : [{ key: 'Retry-After', value: String(s) }];
}

/**
 * headersFor — the IETF fields for the binding descriptor: when refused, the refusing one with the longest wait;
 * when admitted, the one with the least remaining. Retry-After with a refusal. A limit in shadow mode (its own
 * `shadow_mode`, or `shadow` for the whole service) refuses nothing, so it never binds: with no enforced limit there
 * are no fields.
 */
function headersFor(items: Item[], decisions: Decision[], shadow: boolean): RlsResponse['response_headers_to_add'] {
  if (shadow) return [];
  let bind = -1;
  const refused = decisions.some((d) => !d.allowed);
  for (let j = 0; j < decisions.length; j++) {
    const d = decisions[j];
    if (items[j].spec?.shadowMode === true) continue;
    if (refused ? !d.allowed && (bind < 0 || d.retryAfter > decisions[bind].retryAfter) : bind < 0 || d.remaining < decisions[bind].remaining) bind = j;
  }
  if (bind < 0) return [];
  const d = decisions[bind];
  const rt = items[bind].rt;
  const out = [
    { key: 'RateLimit-Policy', value: rt.policyField },
    { key: 'RateLimit', value: rt.writer.write(d) },
  ];
  if (refused) {
    const s = seconds(d.retryAfter);
    if (s !== undefined) out.push({ key: 'Retry-After', value: String(s) });
  }
  return out;
}

/**
 * policyKey — a native policy's store key for a client: the policy's name and the key, injectively. With key '', the
 * namespace of the policy's limiter (the store puts it in front of every client key).
 */
export function policyKey(policy: string, key: string): string {
  return `${policy.length}:${policy}:${key}`;
}
