/**
 * limiters — the limiters in force for the configured limits and native policies, and the reload machinery that
 * replaces them: plan a configuration against the one in force (keep / revive / build / drop), build in slices
 * (prepare), swap in one step (commit), hand clients over to the successors lazily (the sweep), and keep dropped
 * limiters for a grace period (retired). The decision path only reads `limits` and `policies`.
 */
import type { RuleConfig } from '../core/algorithms/common.js';
import { Limiter } from '../limiter.js';
import type { Store } from '../stores/types.js';
import { domainSpace } from './config/key.js';
import type { ServiceConfig } from './config/types.js';
import { policyKey, retire, runtimeOf, type Runtime } from './runtime.js';

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

/** LimitersOptions — how the limiters are built (the service's options of the same names). */
export interface LimitersOptions {
  store: Store;
  shadowMode?: boolean;
  denialCache?: boolean;
  observe?: boolean;
  clock?: { now(): number };
}

/**
 * Limiters — the configuration in force and its limiters. `limits` (by LimitSpec id) and `policies` (by native
 * policy name) are swapped whole at each commit, reusing same-fingerprint limiters.
 */
export class Limiters {
  /** cfg — the configuration in force, or undefined before the first commit. */
  cfg: ServiceConfig | undefined;
  limits = new Map<string, Runtime>();
  policies = new Map<string, Runtime>();
  /**
   * retired — limiters the configuration dropped, by `limit:<id>` / `policy:<name>`, oldest first, with when (ms):
   * within RETIRED_GRACE_MS a limit that comes back with the same rules takes its limiter back. At most MAX_RETIRED.
   */
  private readonly retired = new Map<string, { runtime: Runtime; at: number }>();
  private readonly store: Store;

  constructor(private readonly options: LimitersOptions) {
    this.store = options.store;
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
      retire(this.store, old);
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

  /** planConfig — what `cfg` keeps and what it must build, decided against the configuration in force. */
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
    return runtimeOf(limiter, fingerprint);
  }

  /**
   * retireLater — a limiter the configuration no longer uses: kept, with its clients' state, for RETIRED_GRACE_MS
   * under its name (a config rewritten in two steps that drops a limit and brings it back finds it), at most
   * MAX_RETIRED of them (the oldest retired for good first).
   */
  private retireLater(name: string, r: Runtime, now: number): void {
    const prior = this.retired.get(name);
    if (prior !== undefined && prior.runtime !== r) retire(this.store, prior.runtime);
    this.retired.delete(name);
    this.retired.set(name, { runtime: r, at: now });
  }

  /** sweepRetired — retires for good the limiters past their grace period, and the oldest past MAX_RETIRED. */
  private sweepRetired(now: number): void {
    for (const [name, r] of this.retired) {
      if (now - r.at < RETIRED_GRACE_MS && this.retired.size <= MAX_RETIRED) break;
      this.retired.delete(name);
      retire(this.store, r.runtime);
    }
  }

  /** dropRetired — retires for good every limiter kept for its grace period (the service is closing). */
  dropRetired(): void {
    this.settle();
    for (const r of this.retired.values()) retire(this.store, r.runtime);
    this.retired.clear();
  }
}
