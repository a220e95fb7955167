import type { Decision, Override, RuleOutcome } from './types.js';
import type { Rule, RuleConfig } from './algorithms/common.js';
import { RatekeeperError, show } from './errors.js';
import { FixedWindow } from './algorithms/fixedWindow.js';
import { SlidingWindow } from './algorithms/slidingWindow.js';
import { TokenBucket, LeakyBucket } from './algorithms/tokenBucket.js';
import { Gcra } from './algorithms/gcra.js';
import { Earrrl } from './algorithms/earrrl.js';
import { Exponential } from './algorithms/exponential.js';
import { Log, SlidingLog } from './algorithms/slidingLog.js';

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

/** PolicyOptions — what a policy is made of. */
export interface PolicyOptions {
  rules: readonly RuleConfig[];
  /** dryRun — measure, change state as if enforced, but always allow. @default false */
  dryRun?: boolean;
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

  constructor(options: PolicyOptions) {
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
    this.rules = Object.freeze([...(list as RuleConfig[])]);
    this.dryRun = options.dryRun ?? false;
    const logRules = this.rules.filter((r) => r.algorithm === 'slidingLog');
    this.hasLog = logRules.length > 0;
    if (new Set(logRules.map((r) => r.accounting)).size > 1) {
      throw new RatekeeperError(`slidingLog rules share one log, so they must share one accounting: got ${logRules.map((r) => `${r.name}: ${r.accounting}`).join(', ')}`);
    }
    this.logStrict = logRules[0]?.accounting === 'strict';
    this.logPer = Math.max(0, ...logRules.map((r) => r.per));
    this.logLimit = Math.max(0, ...logRules.map((r) => r.limit));
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
  }

  /**
   * evaluate — decides a request of `cost` at `now` for the client whose state is `s[o … o + stateSize)` and
   * `log`, and updates that state in place. `override` is the client's block or exemption, if any.
   */
  evaluate(s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, override?: Override): Decision {
    if (override !== undefined && override.until > now) return this.overridden(s, o, log, now, override);
    const machines = this.machines;
    const count = machines.length;
    const n = this.scratch;
    let allowed = true;
    for (let i = 0; i < count; i++) {
      const m = machines[i];
      const ok = m instanceof SlidingLog ? m.admits(log as Log, now, cost) : m.next(s, o + this.offsets[i], now, cost, n, this.offsets[i]);
      this.admits[i] = ok ? 1 : 0;
      if (!ok) allowed = false;
    }
    if (cost > 0) {
      for (let i = 0; i < count; i++) {
        const m = machines[i];
        if (m instanceof SlidingLog || !(allowed || this.strict[i] === 1)) continue;
        const off = this.offsets[i];
        for (let k = 0; k < m.stateSize; k++) s[o + off + k] = n[off + k];
      }
      if (this.hasLog && (allowed || this.logStrict)) {
        (log as Log).push(now, cost);
        (log as Log).trim(now - this.logPer, this.logLimit);
      }
    }
    const outcomes = new Array<RuleOutcome>(count);
    for (let i = 0; i < count; i++) outcomes[i] = this.outcome(i, s, o, log, now, cost, this.admits[i] === 1, allowed);
    return this.finish(outcomes, allowed);
  }

  /** outcome — rule i's report after the decision, from the state as stored. */
  private outcome(i: number, s: Float64Array, o: number, log: Log | undefined, now: number, cost: number, admits: boolean, allowed: boolean): RuleOutcome {
    const m = this.machines[i];
    const c = this.rules[i];
    if (m instanceof SlidingLog) {
      const l = log as Log;
      return {
        name: c.name, algorithm: c.algorithm, allowed: admits, limit: c.limit, remaining: m.remaining(l, now),
        retryAfter: allowed ? 0 : m.wait(l, now, cost), resetAfter: m.resetAfter(l, now),
      };
    }
    const at = o + this.offsets[i];
    const out: RuleOutcome = {
      name: c.name, algorithm: c.algorithm, allowed: admits, limit: c.limit, remaining: m.remaining(s, at, now),
      retryAfter: allowed ? 0 : m.wait(s, at, now, cost), resetAfter: m.resetAfter(s, at, now),
    };
    if (m.rate === m.rate) out.rate = m.rate; // not NaN: the rule measures a rate
    if (m.delay === m.delay) out.delay = allowed ? m.delay : 0;
    return out;
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
    const d: Decision = {
      allowed: allowed || this.dryRun,
      reason: allowed ? 'allowed' : this.dryRun ? 'dry-run' : 'limited',
      limit: bind.limit,
      remaining: bind.remaining,
      retryAfter: bind.retryAfter,
      resetAfter: bind.resetAfter,
      rules: outcomes,
    };
    if (rate !== undefined) d.rate = rate;
    if (delay !== undefined) d.delay = delay;
    return d;
  }

  /** peekOutcomes — every rule's report for the stored state at `now`, charging nothing. */
  peekOutcomes(s: Float64Array, o: number, log: Log | undefined, now: number): RuleOutcome[] {
    return this.machines.map((m, i) => {
      const c = this.rules[i];
      const admits = m instanceof SlidingLog
        ? m.admits(log as Log, now, 0)
        : m.next(s, o + this.offsets[i], now, 0, this.scratch, this.offsets[i]);
      return this.outcome(i, s, o, log, now, 0, admits, true);
    });
  }

  /**
   * overridden — the decision for a blocked or exempt client: no rule is charged; the rules report their state.
   * A block refuses until it ends (retryAfter Infinity for one without end); dry-run still admits.
   */
  overridden(s: Float64Array, o: number, log: Log | undefined, now: number, override: Override): Decision {
    return this.overrideDecision(this.peekOutcomes(s, o, log, now), override, now);
  }

  /** overrideDecision — builds the blocked/exempt decision from the rules' peeked outcomes (shared by every store). */
  overrideDecision(outcomes: RuleOutcome[], override: Override, now: number): Decision {
    const first = outcomes[0];
    if (override.kind === 'exempt') {
      return { allowed: true, reason: 'exempt', limit: first.limit, remaining: first.limit, retryAfter: 0, resetAfter: 0, rules: outcomes };
    }
    const left = override.until === Infinity ? Infinity : override.until - now;
    const d: Decision = {
      allowed: this.dryRun,
      reason: this.dryRun ? 'dry-run' : 'blocked',
      limit: first.limit,
      remaining: 0,
      retryAfter: left,
      resetAfter: left,
      rules: outcomes,
    };
    if (override.reason !== undefined) d.blockReason = override.reason;
    return d;
  }

  /** newLog — a fresh log for a client of this policy. */
  newLog(): Log | undefined {
    return this.hasLog ? new Log() : undefined;
  }
}
