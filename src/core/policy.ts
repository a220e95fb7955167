/**
 * policy — Policy: several rules decided all-or-nothing over one client's state, with blocks, exemptions and dry-run.
 * Long because Policy is one class over its compiled rules' private layout: evaluate, verdict, refund, the local-first
 * mode's replay (force), the reports, overrides and adoption all read it, and splitting it would expose that layout.
 */
import type { Decision, Override, RuleOutcome } from './types.js';
import { measured, type Rule, type RuleConfig } from './algorithms/common.js';
import { RatekeeperError, show } from './errors.js';
import { checkOptions } from './options.js';
import { FixedWindow } from './algorithms/fixedWindow.js';
import { SlidingWindow } from './algorithms/slidingWindow.js';
import { TokenBucket } from './algorithms/tokenBucket.js';
import { LeakyBucket } from './algorithms/leakyBucket.js';
import { Gcra } from './algorithms/gcra.js';
import { Earrrl } from './algorithms/earrrl.js';
import { Exponential } from './algorithms/exponential.js';
import { Log, SlidingLog, enoughFor } from './algorithms/slidingLog.js';
import * as dispatch from './algorithms/dispatch.js';

/**
 * Outcome, Verdict — RuleOutcome and Decision as classes: every instance has the same fields in the same order
 * (rate and delay are undefined where not measured), so the hot path allocates objects of one shape.
 */
export class Outcome implements RuleOutcome {
  constructor(
    public name: string, public algorithm: RuleConfig['algorithm'], public allowed: boolean, public limit: number,
    public remaining: number, public retryAfter: number, public resetAfter: number,
    public rate: number | undefined, public delay: number | undefined,
  ) {}
}
class Verdict implements Decision {
  declare blockReason?: string;
  declare fallback?: boolean;
  constructor(
    public allowed: boolean, public reason: Decision['reason'], public limit: number, public remaining: number,
    public retryAfter: number, public resetAfter: number, public rate: number | undefined, public delay: number | undefined,
    public rules: RuleOutcome[],
  ) {}
}

const AUTO_BLOCK_OPTIONS: ReadonlySet<string> = new Set(['for', 'reason']);

/** compile — the state machine of one rule (slidingLog rules are compiled to SlidingLog, over the shared log). */
function compile(config: RuleConfig): Rule | SlidingLog {
  switch (config.algorithm) {
    case 'fixedWindow': return new FixedWindow(config);
    case 'slidingWindow': return new SlidingWindow(config);
    case 'slidingLog': return new SlidingLog(config);
    case 'tokenBucket': return new TokenBucket(config);
    case 'leakyBucket': return new LeakyBucket(config);
    case 'gcra': return new Gcra(config);
    case 'earrrl': return new Earrrl(config);
    case 'exponential': return new Exponential(config);
  }
}

function isRuleConfig(r: unknown): r is RuleConfig {
  return typeof r === 'object' && r !== null && typeof (r as RuleConfig).algorithm === 'string' && Object.isFrozen(r);
}

const POLICY_OPTIONS: ReadonlySet<string> = new Set(['rules', 'dryRun', 'id', 'autoBlock']);

/**
 * AutoBlock — a policy's automatic block: a client its rules refuse is blocked for `for` ms from that refusal
 * (rate-limiter-flexible's `blockDuration`), with `reason` (default: `automatic: refused at <the refusing rule>`).
 */
export interface AutoBlock {
  /** for — ms the block lasts, from the refusal; finite and > 0. */
  for: number;
  /** reason — listed with the block and reported on every decision it makes (`blockReason`). */
  reason?: string;
}

/** PolicyOptions — what a policy is made of. */
export interface PolicyOptions {
  rules: readonly RuleConfig[];
  /** dryRun — measure, change state as if enforced, but always allow. @default false */
  dryRun?: boolean;
  /**
   * id — names the clients' state in a shared store (Redis): policies with the same id and compatible rules (the same
   * algorithms and periods, in order: {@link Policy.compatible}) read and write one state per client whatever their
   * limits, bursts and half-lives — a rule change, or instances holding different rules during a rolling change, never
   * give a client two budgets. Without it the state is named by the whole rules: policies with other rules never share
   * it. The memory store keeps a table per policy either way. @default undefined
   */
  id?: string;
  /** autoBlock — block a client for a while once its rules refuse it (see {@link AutoBlock}). @default undefined */
  autoBlock?: AutoBlock;
}

/**
 * Policy — several rules decided all-or-nothing over one client's state, plus blocks, exemptions and dry-run.
 * Pure: the caller owns the state (a slice of a Float64Array, `stateSize` numbers, all zero for a fresh client,
 * and a {@link Log} when `hasLog`) and passes the time. A request is admitted only if every rule admits it; then
 * every rule is charged. A refused request charges only the rules with strict accounting. Cost 0 charges nothing.
 */
export class Policy {
  readonly rules: readonly RuleConfig[];
  readonly dryRun: boolean;
  /** id — the name of the clients' state in a shared store (PolicyOptions.id), or undefined. */
  readonly id: string | undefined;
  /** stateSize — numbers of slice state per client (the slidingLog rules keep theirs in the log). */
  readonly stateSize: number;
  /** hasLog — whether the policy has slidingLog rules, and so needs a Log per client. */
  readonly hasLog: boolean;
  /** logStrict — the accounting of the shared log (one for all slidingLog rules). */
  private readonly logStrict: boolean;
  /** logPer, logLimit — how far back and how much cost the shared log must keep. */
  private readonly logPer: number;
  private readonly logLimit: number;
  /** machines — compiled rules, parallel to `rules`. */
  private readonly machines: (Rule | SlidingLog)[];
  /** offsets — where each rule's state starts in the slice (slidingLog rules: unused). */
  private readonly offsets: Int32Array;
  private readonly strict: Uint8Array;
  /** scratch, admits — per-call scratch: the charged state and each rule's verdict (single-threaded reuse). */
  private readonly scratch: Float64Array;
  private readonly admits: Uint8Array;
  /** rates, delays — per-call scratch: what each rule's next() measured (NaN: nothing). */
  private readonly rates: Float64Array;
  private readonly delays: Float64Array;
  /** sizes — each rule's state size (0 for slidingLog rules). */
  private readonly sizes: Int32Array;
  /** kinds — each rule's dispatch kind (−1: slidingLog, over the shared log). */
  private readonly kinds: Int8Array;
  /** single — the only rule, when the policy has exactly one and it keeps slice state: the hot path skips the loops. */
  private readonly single: Rule | null;
  /** blockFor — ms an automatic block lasts (PolicyOptions.autoBlock); 0: no automatic block. */
  readonly blockFor: number;
  /** blockReasons — per rule, the reason of an automatic block it caused (the same string for every rule when given). */
  readonly blockReasons: readonly string[];

  constructor(options: PolicyOptions) {
    if (typeof options === 'object' && options !== null) checkOptions(options, POLICY_OPTIONS, 'Policy');
    const list = options?.rules as unknown;
    if (!Array.isArray(list) || list.length === 0) {
      throw new RatekeeperError(`rules must be a non-empty array of rules (rules.gcra({...}), parseRules('20/min')…), got ${show(list)}`);
    }
    const names = new Set<string>();
    list.forEach((r, i) => {
      if (!isRuleConfig(r)) throw new RatekeeperError(`rules[${i}] must be made by rules.*() or parseRules(), got ${show(r)}`);
      if (names.has(r.name)) throw new RatekeeperError(`rules[${i}].name ${show(r.name)} is used by another rule: give each rule its own name`);
      names.add(r.name);
    });
    if (options.dryRun !== undefined && typeof options.dryRun !== 'boolean') {
      throw new RatekeeperError(`dryRun must be a boolean, got ${show(options.dryRun)}`);
    }
    if (options.id !== undefined && (typeof options.id !== 'string' || options.id.length === 0 || options.id.length > 1024)) {
      throw new RatekeeperError(`id must be a non-empty string of at most 1024 characters, got ${show(options.id)}`);
    }
    this.rules = Object.freeze([...(list as RuleConfig[])]);
    this.dryRun = options.dryRun ?? false;
    this.id = options.id;
    const logRules = this.rules.filter((r) => r.algorithm === 'slidingLog');
    this.hasLog = logRules.length > 0;
    if (new Set(logRules.map((r) => r.accounting)).size > 1) {
      throw new RatekeeperError(`slidingLog rules share one log, so they must share one accounting: got ${logRules.map((r) => `${r.name}: ${r.accounting}`).join(', ')}`);
    }
    this.logStrict = logRules[0]?.accounting === 'strict';
    this.logPer = Math.max(0, ...logRules.map((r) => r.per));
    this.logLimit = enoughFor(logRules.map((r) => r.limit));
    this.machines = this.rules.map(compile);
    this.offsets = new Int32Array(this.rules.length);
    this.strict = new Uint8Array(this.rules.map((r) => (r.accounting === 'strict' ? 1 : 0)));
    let size = 0;
    this.machines.forEach((m, i) => {
      this.offsets[i] = size;
      if (!(m instanceof SlidingLog)) size += m.stateSize;
    });
    this.stateSize = size;
    this.scratch = new Float64Array(Math.max(1, size));
    this.admits = new Uint8Array(this.rules.length);
    this.rates = new Float64Array(this.rules.length);
    this.delays = new Float64Array(this.rules.length);
    this.sizes = new Int32Array(this.machines.map((m) => (m instanceof SlidingLog ? 0 : m.stateSize)));
    this.kinds = new Int8Array(this.machines.map((m) => (m instanceof SlidingLog ? -1 : dispatch.kindOf(m))));
    const only = this.machines.length === 1 ? this.machines[0] : null;
    this.single = only !== null && !(only instanceof SlidingLog) ? only : null;
    const auto = options.autoBlock;
    if (auto !== undefined) {
      if (typeof auto !== 'object' || auto === null) throw new RatekeeperError(`autoBlock must be an object like { for: 900000 } (ms), got ${show(auto)}`);
      checkOptions(auto, AUTO_BLOCK_OPTIONS, 'autoBlock');
      if (typeof auto.for !== 'number' || !Number.isFinite(auto.for) || auto.for <= 0) throw new RatekeeperError(`autoBlock.for must be a finite number of ms > 0, got ${show(auto.for)}`);
      if (auto.reason !== undefined && typeof auto.reason !== 'string') throw new RatekeeperError(`autoBlock.reason must be a string, got ${show(auto.reason)}`);
    }
    this.blockFor = auto?.for ?? 0;
    this.blockReasons = this.rules.map((r) => auto?.reason ?? `automatic: refused at ${r.name}`);
  }

  /**
   * autoBlocks — whether decision `d`, made by this policy's rules for a request of `cost` (no block or exemption in
   * force), starts an automatic block: the policy has one, the request spent something, and the rules refused it
   * (`limited`, or `dry-run` where enforcement would have refused: state changes as if enforced). A compound part
   * vetoed by another part keeps its own verdict, so it starts none unless its own rules refused it.
   */
  autoBlocks(d: Decision, cost: number): boolean {
    return this.blockFor > 0 && cost > 0 && (d.reason === 'limited' || d.reason === 'dry-run');
  }

  /**
   * autoBlocked — `d` (a refusal that starts an automatic block) told as what it is: its retryAfter is the block's end
   * unless a rule waits longer (nothing is charged while blocked, so the same request is admitted exactly then).
   * Returns the block's reason: the given one, or `automatic: refused at <rule>` for the binding rule.
   */
  autoBlocked(d: Decision): string {
    if (d.retryAfter < this.blockFor) d.retryAfter = this.blockFor;
    const rules = d.rules;
    let bind = 0;
    for (let i = 1; i < rules.length; i++) if (!rules[i].allowed && (rules[bind].allowed || rules[i].retryAfter > rules[bind].retryAfter)) bind = i;
    return this.blockReasons[bind];
  }

  /**
   * evaluate — decides a request of `cost` at `now` for the client whose state is `s[o … o + stateSize)` and
   * `log`, and updates that state in place. `override` is the client's block or exemption, if any.
   * `veto` — another part of a compound request refused it (checkAll): the request is not admitted whatever these
   * rules say, so it is charged as a refused one (the strict rules only), while the decision keeps this policy's own
   * verdict (`allowed`, `retryAfter` 0 when its rules admit) and reports from the state as stored, with no delay.
   */
  evaluate(s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, override?: Override, veto?: boolean): Decision {
    if (override !== undefined && override.until > now) return this.overridden(s, o, log, now, cost, override);
    if (this.single !== null) return this.evaluateSingle(this.single, s, o, now, cost, veto === true);
    const machines = this.machines;
    const count = machines.length;
    const n = this.scratch;
    let allowed = true;
    for (let i = 0; i < count; i++) {
      const m = machines[i];
      const k = this.kinds[i];
      measured.rate = measured.delay = Number.NaN;
      const ok = k < 0 ? (m as SlidingLog).admits(log as Log, now, cost) : dispatch.next(k, m as Rule, s, o + this.offsets[i], now, cost, n, this.offsets[i]);
      this.admits[i] = ok ? 1 : 0;
      this.rates[i] = measured.rate;
      this.delays[i] = measured.delay;
      if (!ok) allowed = false;
    }
    const charged = allowed && veto !== true;
    if (cost > 0) {
      for (let i = 0; i < count; i++) {
        if (this.kinds[i] < 0 || !(charged || this.strict[i] === 1)) continue;
        const off = this.offsets[i];
        for (let k = 0, size = this.sizes[i]; k < size; k++) s[o + off + k] = n[off + k];
      }
      if (this.hasLog && (charged || this.logStrict)) {
        (log as Log).push(now, cost);
        (log as Log).trim(now - this.logPer, this.logLimit);
      }
    }
    const outcomes = new Array<RuleOutcome>(count);
    for (let i = 0; i < count; i++) outcomes[i] = this.outcome(i, s, o, log, now, cost, this.admits[i] === 1, allowed, charged);
    return this.finish(outcomes, allowed);
  }

  /**
   * verdict — whether a request of `cost` at `now` would get `allowed: true` from {@link evaluate} (its rules admit it,
   * or the policy is dry-run, or the client is exempt; a block refuses unless dry-run), charging nothing.
   */
  verdict(s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, override?: Override): boolean {
    if (override !== undefined && override.until > now) return override.kind === 'exempt' || this.dryRun;
    if (this.dryRun) return true;
    const machines = this.machines;
    for (let i = 0, count = machines.length; i < count; i++) {
      const k = this.kinds[i];
      const ok = k < 0
        ? (machines[i] as SlidingLog).admits(log as Log, now, cost)
        : dispatch.next(k, machines[i] as Rule, s, o + this.offsets[i], now, cost, this.scratch, this.offsets[i]);
      if (!ok) return false;
    }
    return true;
  }

  /**
   * refund — gives back `cost` units of the client's latest charges, in place (each algorithm's refund); with
   * `leakyOnly`, only to the rules with leaky accounting (what a compound request that was refused elsewhere gives
   * back: its strict rules keep the charge, as for any refused request).
   */
  refund(s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, leakyOnly = false): void {
    if (!(cost > 0)) return;
    for (let i = 0; i < this.machines.length; i++) {
      const k = this.kinds[i];
      if (k < 0 || (leakyOnly && this.strict[i] === 1)) continue;
      dispatch.refund(k, this.machines[i] as Rule, s, o + this.offsets[i], now, cost);
    }
    if (this.hasLog && !(leakyOnly && this.logStrict)) (log as Log).refund(cost);
  }

  /**
   * force — applies a charge decided elsewhere (the Redis store's local-first mode replays the charges its copy made
   * since a sync was sent onto the global state the sync returned): `admitted` charges every rule as an admitted
   * request, else only the strict rules (a refused request), whatever the rules would say of `s` now — the state may
   * pass its limit (a debt). Each rule's next() at `now`: a time behind the state's is taken as the state's. The
   * shared sliding `log` (given when the policy has one) files it by its accounting at `now` (at its newest entry's
   * time when that is later) and is trimmed, as evaluate files a request. Cost 0 changes nothing.
   */
  force(s: Float64Array, o: number, now: number, cost: number, admitted: boolean, log?: Log): void {
    if (!(cost > 0)) return;
    if (log !== undefined && (admitted || this.logStrict)) {
      log.push(now, cost);
      log.trim(now - this.logPer, this.logLimit);
    }
    const n = this.scratch;
    for (let i = 0; i < this.machines.length; i++) {
      const k = this.kinds[i];
      if (k < 0 || !(admitted || this.strict[i] === 1)) continue;
      const off = this.offsets[i];
      dispatch.next(k, this.machines[i] as Rule, s, o + off, now, cost, n, off);
      for (let j = 0, size = this.sizes[i]; j < size; j++) s[o + off + j] = n[off + j];
    }
  }

  /** hasStrict — whether a refused request charges anything (a rule, or the shared log, with strict accounting). */
  get hasStrict(): boolean {
    return this.strict.includes(1) || this.logStrict;
  }

  /** evaluateSingle — evaluate() for a policy of one slice rule: the same steps without the loops. */
  private evaluateSingle(m: Rule, s: Float64Array, o: number, now: number, cost: number, veto: boolean): Decision {
    const n = this.scratch;
    const k = this.kinds[0];
    measured.rate = measured.delay = Number.NaN;
    const ok = dispatch.next(k, m, s, o, now, cost, n, 0);
    const measuredRate = measured.rate;
    const measuredDelay = measured.delay;
    const charged = ok && !veto;
    if (cost > 0 && (charged || this.strict[0] === 1)) for (let j = 0, size = this.sizes[0]; j < size; j++) s[o + j] = n[j];
    const c = this.rules[0];
    dispatch.report(k, m, s, o, now);
    const remaining = measured.remaining;
    const resetAfter = measured.resetAfter;
    const retryAfter = ok ? 0 : dispatch.wait(k, m, s, o, now, cost);
    const rate = measuredRate === measuredRate ? measuredRate : undefined;
    const delay = measuredDelay === measuredDelay ? (charged ? measuredDelay : 0) : undefined;
    const out = new Outcome(c.name, c.algorithm, ok, c.limit, remaining, retryAfter, resetAfter, rate, delay);
    const dry = !ok && this.dryRun;
    return new Verdict(ok || dry, ok ? 'allowed' : dry ? 'dry-run' : 'limited', c.limit, remaining, retryAfter, resetAfter, rate, delay, [out]);
  }

  /** outcome — rule i's report after the decision, from the state as stored. */
  private outcome(i: number, s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, admits: boolean, allowed: boolean, charged = allowed): RuleOutcome {
    const m = this.machines[i];
    const c = this.rules[i];
    const k = this.kinds[i];
    if (k < 0) {
      const l = log as Log;
      const g = m as SlidingLog;
      return new Outcome(c.name, c.algorithm, admits, c.limit, g.remaining(l, now), allowed ? 0 : g.wait(l, now, cost), g.resetAfter(l, now), undefined, undefined);
    }
    const r = m as Rule;
    const at = o + this.offsets[i];
    const rate = this.rates[i];
    const delay = this.delays[i];
    dispatch.report(k, r, s, at, now);
    const remaining = measured.remaining;
    const resetAfter = measured.resetAfter;
    return new Outcome(
      c.name, c.algorithm, admits, c.limit, remaining, allowed ? 0 : dispatch.wait(k, r, s, at, now, cost),
      resetAfter, rate === rate ? rate : undefined, delay === delay ? (charged ? delay : 0) : undefined,
    );
  }

  /**
   * finish — the decision from the rules' outcomes (shared by every store): the binding rule is the one with the
   * longest wait when refused, the least remaining when admitted; dry-run turns a refusal into an admission.
   */
  finish(outcomes: RuleOutcome[], allowed: boolean): Decision {
    let bind = outcomes[0];
    let rate: number | undefined;
    let delay: number | undefined;
    for (let i = 0; i < outcomes.length; i++) {
      const r = outcomes[i];
      if (allowed ? r.remaining < bind.remaining : r.retryAfter > bind.retryAfter) bind = r;
      if (r.rate !== undefined && (rate === undefined || r.rate > rate)) rate = r.rate;
      if (r.delay !== undefined && (delay === undefined || r.delay > delay)) delay = r.delay;
    }
    return new Verdict(
      allowed || this.dryRun, allowed ? 'allowed' : this.dryRun ? 'dry-run' : 'limited',
      bind.limit, bind.remaining, bind.retryAfter, bind.resetAfter, rate, delay, outcomes,
    );
  }

  /**
   * peekOutcomes — every rule's verdict on a request of `cost` at `now` and its report from the stored state,
   * charging nothing (the rules of a blocked or exempt client): `retryAfter` is each rule's own wait for it.
   */
  peekOutcomes(s: Float64Array, o: number, log: Log | undefined, now: number, cost: number): RuleOutcome[] {
    return this.machines.map((m, i) => {
      const k = this.kinds[i];
      measured.rate = measured.delay = Number.NaN;
      const admits = k < 0
        ? (m as SlidingLog).admits(log as Log, now, cost)
        : dispatch.next(k, m as Rule, s, o + this.offsets[i], now, cost, this.scratch, this.offsets[i]);
      this.rates[i] = measured.rate;
      this.delays[i] = measured.delay;
      return this.outcome(i, s, o, log, now, cost, admits, false);
    });
  }

  /**
   * overridden — the decision for a blocked or exempt client: no rule is charged; the rules say what they would do.
   * A block refuses until it ends and every rule admits the request (retryAfter Infinity for one without end);
   * dry-run still admits.
   */
  overridden(s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, override: Override): Decision {
    return this.overrideDecision(this.peekOutcomes(s, o, log, now, cost), override, now);
  }

  /** overrideDecision — builds the blocked/exempt decision from the rules' peeked outcomes (shared by every store). */
  overrideDecision(outcomes: RuleOutcome[], override: Override, now: number): Decision {
    const first = outcomes[0];
    if (override.kind === 'exempt') {
      return new Verdict(true, 'exempt', first.limit, first.limit, 0, 0, undefined, undefined, outcomes);
    }
    const left = override.until === Infinity ? Infinity : override.until - now;
    // the same request is admitted once the block is over and every rule admits it (nothing is charged meanwhile)
    let retry = left;
    for (let i = 0; i < outcomes.length; i++) if (outcomes[i].retryAfter > retry) retry = outcomes[i].retryAfter;
    const d = new Verdict(this.dryRun, this.dryRun ? 'dry-run' : 'blocked', first.limit, 0, retry, left, undefined, undefined, outcomes);
    if (override.reason !== undefined) d.blockReason = override.reason;
    return d;
  }

  /**
   * compatible — whether a client's state under `from` can be carried into this policy (Policy.adopt): the same
   * number of rules, in the same order, each of the same algorithm and `per`, so the state has the same layout and
   * every number the same meaning. Limit, burst, halfLife, accounting, name and dry-run may differ: they change how
   * the state is judged, not what it holds. Another algorithm or period starts the client fresh.
   */
  compatible(from: Policy): boolean {
    const a = from.rules;
    const b = this.rules;
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (a[i].algorithm !== b[i].algorithm || a[i].per !== b[i].per) return false;
    return true;
  }

  /**
   * adopt — converts in place one client's state `s[o … o + stateSize)` and `log`, written under the compatible
   * policy `from`, into this policy's terms at `now` (each rule's adopt: the used amount carries over and is judged by
   * the new rule). The shared sliding log keeps its entries: the next charge trims it to this policy's limits.
   */
  adopt(from: Policy, s: Float64Array, o: number, now: number): void {
    const machines = this.machines;
    for (let i = 0; i < machines.length; i++) {
      const m = machines[i];
      if (!(m instanceof SlidingLog)) m.adopt(from.rules[i], s, o + this.offsets[i], now);
    }
  }

  /** newLog — a fresh log for a client of this policy. */
  newLog(): Log | undefined {
    return this.hasLog ? new Log() : undefined;
  }
}
