import type { Reason } from '../core/types.js';
import type { RuleConfig } from '../core/algorithms/common.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptionsObject } from '../core/options.js';

const REPLAY_OPTIONS: ReadonlySet<string> = new Set(['limiters', 'sampleEvery', 'from', 'until']);
const LIMITER_SPEC: ReadonlySet<string> = new Set(['name', 'rules', 'dryRun']);
import { parseRules } from '../core/rules.js';
import { limiter } from '../limiter.js';
import { memoryStore } from '../stores/memory.js';
import type { Trace } from './trace.js';

/** LimiterSpec — one limiter to replay a trace through: a label and its rules. */
export interface LimiterSpec {
  /** name — how the CSV and the plot call it, e.g. `'windowed (fixed window 30/30s)'`. Unique within a replay. */
  name: string;
  /** rules — the policy, as rule values or text for parseRules (slidingLog). */
  rules: readonly RuleConfig[] | string;
  dryRun?: boolean;
}

/** ReplayOptions — what to replay a trace through and how often to sample the rate estimates. */
export interface ReplayOptions {
  limiters: readonly LimiterSpec[];
  /**
   * sampleEvery — ms between samples of the estimate of every rule that measures a rate (earrrl, exponential),
   * taken with a cost-0 peek for every key, so the curves are smooth between requests; 0 for none.
   * A sample at t is taken before the requests at t: it is the estimate a request arriving at t is judged by.
   * When sampling, every request is also followed by a peek of its key at the same time (`after: true`), so the
   * jump each request makes is drawn exactly even when the grid is coarser than the requests.
   * @default 0
   */
  sampleEvery?: number;
  /** from, until — ms, the span sampled. @default the first and last request's times */
  from?: number;
  until?: number;
}

/** RequestRecord — what one limiter did with one request of the trace. */
export interface RequestRecord {
  limiter: string;
  /** t — ms. */
  t: number;
  key: string;
  /** sent — the request's cost. */
  sent: number;
  /** admitted — the cost admitted: `sent` when allowed, else 0. */
  admitted: number;
  allowed: boolean;
  reason: Reason;
  /** rate — the decision's rate (per second): the highest estimate among the rules that measure one, before this request for earrrl. */
  rate?: number;
  /** retryAfter — ms, from the decision. */
  retryAfter: number;
  /** cumSent, cumAdmitted — of this key under this limiter, up to and including this request. */
  cumSent: number;
  cumAdmitted: number;
}

/** EstimateSample — one rule's rate estimate for one key at one sample time (a cost-0 peek). */
export interface EstimateSample {
  limiter: string;
  /** t — ms. */
  t: number;
  key: string;
  rule: string;
  /** rate — per second. */
  rate: number;
  /** after — true for the peek right after a request of this key at `t` (the top of the jump), false for a grid sample. */
  after: boolean;
}

/** ReplayResult — every decision and every estimate sample, per limiter in the options' order. */
export interface ReplayResult {
  limiters: { name: string; rules: readonly RuleConfig[] }[];
  /** keys — in order of first appearance. */
  keys: string[];
  requests: RequestRecord[];
  estimates: EstimateSample[];
  /** from, until — ms, the span replayed and sampled. */
  from: number;
  until: number;
}

/** RATE_ALGORITHMS — the rules whose decisions carry a measured rate. */
const RATE_ALGORITHMS = new Set(['earrrl', 'exponential']);

/**
 * replay — runs `trace` through each limiter on the memory store with a virtual clock: every request is
 * `checkSync(key, { cost, now: t })` in time order, and every `sampleEvery` ms each key's estimate is peeked.
 * Limiters are independent: each gets its own store and sees the whole trace.
 */
export function replay(trace: Trace, options: ReplayOptions): ReplayResult {
  checkOptionsObject(options, REPLAY_OPTIONS, 'replay', 'ERR_ARGUMENT');
  if (!Array.isArray(options.limiters) || options.limiters.length === 0) {
    throw new RatekeeperError(`replay needs at least one limiter, got ${show(options.limiters)}`, 'ERR_ARGUMENT');
  }
  const names = new Set<string>();
  for (const l of options.limiters) {
    checkOptionsObject(l, LIMITER_SPEC, 'replay.limiters[]', 'ERR_ARGUMENT');
    if (names.has(l.name)) throw new RatekeeperError(`replay: two limiters are named ${show(l.name)}; give each its own name`, 'ERR_ARGUMENT');
    names.add(l.name);
  }
  for (let i = 1; i < trace.length; i++) {
    if (trace[i].t < trace[i - 1].t) throw new RatekeeperError(`replay: the trace must be in time order (sortTrace), request ${i} at ${trace[i].t} ms comes after one at ${trace[i - 1].t} ms`, 'ERR_ARGUMENT');
  }
  const step = options.sampleEvery ?? 0;
  if (typeof step !== 'number' || !Number.isFinite(step) || step < 0) throw new RatekeeperError(`replay.sampleEvery must be a finite number of ms >= 0, got ${show(step)}`, 'ERR_ARGUMENT');
  const from = options.from ?? (trace.length > 0 ? trace[0].t : 0);
  const until = options.until ?? (trace.length > 0 ? trace[trace.length - 1].t : from);
  if (!Number.isFinite(from) || !Number.isFinite(until) || until < from) {
    throw new RatekeeperError(`replay: the sampled span must be finite with from <= until, got ${show(from)} … ${show(until)}`, 'ERR_ARGUMENT');
  }
  const keys = [...new Set(trace.map((r) => r.key))];
  const result: ReplayResult = { limiters: [], keys, requests: [], estimates: [], from, until };

  for (const spec of options.limiters) {
    const list = typeof spec.rules === 'string' ? parseRules(spec.rules) : spec.rules;
    // now — the virtual clock: every call passes its time explicitly; this is only what the façade would read otherwise.
    let now = from;
    const lim = limiter({ rules: list, store: memoryStore(), dryRun: spec.dryRun, clock: { now: () => now } });
    result.limiters.push({ name: spec.name, rules: lim.policy.rules });
    const sampled = lim.policy.rules.filter((r) => RATE_ALGORITHMS.has(r.algorithm)).map((r) => r.name);
    const sent = new Map<string, number>();
    const admitted = new Map<string, number>();
    let i = 0;
    const peek = (key: string, t: number, after: boolean): void => {
      const d = lim.checkSync(key, { cost: 0, now: t });
      for (const o of d.rules) {
        if (o.rate !== undefined && sampled.includes(o.name)) result.estimates.push({ limiter: spec.name, t, key, rule: o.name, rate: o.rate, after });
      }
    };
    const samples = step > 0 && sampled.length > 0 ? Math.floor((until - from) / step + 1e-9) + 1 : 0;
    for (let k = 0; k <= samples; k++) {
      // Requests strictly before the next sample time, then the sample (k === samples: the requests left).
      const next = k < samples ? from + k * step : Infinity;
      for (; i < trace.length && trace[i].t < next; i++) {
        const r = trace[i];
        now = r.t;
        const d = lim.checkSync(r.key, { cost: r.cost, now: r.t });
        const s = (sent.get(r.key) ?? 0) + r.cost;
        const a = (admitted.get(r.key) ?? 0) + (d.allowed ? r.cost : 0);
        sent.set(r.key, s);
        admitted.set(r.key, a);
        const rec: RequestRecord = {
          limiter: spec.name, t: r.t, key: r.key, sent: r.cost, admitted: d.allowed ? r.cost : 0, allowed: d.allowed,
          reason: d.reason, retryAfter: d.retryAfter, cumSent: s, cumAdmitted: a,
        };
        if (d.rate !== undefined) rec.rate = d.rate;
        result.requests.push(rec);
        if (samples > 0 && r.t >= from && r.t <= until) peek(r.key, r.t, true);
      }
      if (k < samples) {
        now = Math.max(now, next);
        for (const key of keys) peek(key, next, false);
      }
    }
  }
  return result;
}
