/**
 * test/multi/table — THE table of compound requests (checkAll) and refunds, run on every store: each scenario is a
 * set of named limiters and steps with explicit times; every store must give the same decisions as the memory store
 * (estimates within 1e-9 relative), and the steps' expectations hold on every store.
 */
import assert from 'node:assert/strict';
import { limiter, checkAll, type Limiter } from '../../src/index.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import type { Algorithm, Decision } from '../../src/core/types.js';
import { rules } from '../../src/core/rules.js';
import type { Store } from '../../src/stores/types.js';
import { T0 } from '../conformance/scenarios.js';
import { same } from '../conformance/run.js';

/** Item — one part of a compound step: the scenario's limiter `lim`, a key, a cost. */
export interface Item {
  lim: string;
  key: string;
  cost?: number;
}

/** Expect — what a decision must say (fields not given are not checked). */
export type Expect = Partial<Pick<Decision, 'allowed' | 'reason' | 'remaining' | 'retryAfter'>>;

export type Step =
  | { op: 'all'; t: number; items: Item[]; expect?: { allowed: boolean; refusedBy?: number; decisions?: (Expect | undefined)[] } }
  | { op: 'check' | 'refund'; t: number; lim: string; key: string; cost?: number; expect?: Expect }
  | { op: 'block' | 'exempt'; t: number; lim: string; key: string; for?: number };

export interface Scenario {
  name: string;
  limiters: Record<string, { rules: RuleConfig[]; dryRun?: boolean }>;
  steps: Step[];
  /** approximate — the Cluster's decide-then-refund reports from a refund that is not the exact inverse (exponential): compare verdicts only. */
  approximate?: boolean;
}

/** Out — what a step produced: the compound result's verdict and decisions, or one decision. */
export type Out = { allowed: boolean; refusedBy: number; decisions: Decision[] } | Decision | undefined;

/** rule — every algorithm with limit 3 per 10 s (earrrl: half-life 5 s), leaky unless said. */
export function rule(a: Algorithm, extra: Record<string, unknown> = {}): RuleConfig {
  const o = { limit: 3, per: 10_000, accounting: 'leaky', ...extra };
  if (a === 'earrrl') return rules.earrrl({ halfLife: 5_000, ...o } as Parameters<typeof rules.earrrl>[0]);
  return (rules[a] as (x: typeof o) => RuleConfig)(o);
}

export const ALGORITHMS: Algorithm[] = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'];

const gate = { rules: [rules.gcra({ limit: 1, per: 10_000 })] }; // admits one request per 10 s: the refusing part
const all = (t: number, items: Item[], expect?: Extract<Step, { op: 'all' }>['expect']): Step => ({ op: 'all', t, items, ...(expect ? { expect } : {}) });
const one = (op: 'check' | 'refund', t: number, lim: string, key: string, cost?: number, expect?: Expect): Step => ({ op, t, lim, key, cost, ...(expect ? { expect } : {}) });

/**
 * vetoed — an algorithm's item refused elsewhere (by `gate`) three times: its state is as if the refused requests
 * never happened, so its own checks afterwards decide as those of a client that only sent the admitted ones.
 */
function vetoed(a: Algorithm): Scenario {
  return {
    name: `${a} (leaky) vetoed by another item: not charged`,
    limiters: { x: { rules: [rule(a)] }, gate },
    approximate: a === 'exponential',
    steps: [
      all(0, [{ lim: 'x', key: 'u' }, { lim: 'gate', key: 'g' }], { allowed: true, refusedBy: -1 }),
      all(1, [{ lim: 'x', key: 'u' }, { lim: 'gate', key: 'g' }], { allowed: false, refusedBy: 1, decisions: [{ allowed: true, reason: 'allowed', retryAfter: 0 }, { allowed: false, reason: 'limited' }] }),
      all(2, [{ lim: 'gate', key: 'g' }, { lim: 'x', key: 'u' }], { allowed: false, refusedBy: 0, decisions: [{ allowed: false }, { allowed: true }] }),
      all(3, [{ lim: 'x', key: 'u', cost: 2 }, { lim: 'gate', key: 'g' }], { allowed: false, refusedBy: 1 }),
      // as if only the request at 0 had happened: two more fit (earrrl: its burst; every other one: 3 per 10 s)
      one('check', 4, 'x', 'u', 1, { allowed: true }),
      one('check', 5, 'x', 'u', 1, { allowed: true }),
    ],
  };
}

/** refunds — an algorithm's refund: a burst to the limit, a refund of 1 lets one more in; an unknown key and an over-refund give back nothing more than a fresh client's. */
function refunds(a: Algorithm): Scenario {
  return {
    name: `${a}: refunds`,
    limiters: { x: { rules: [rule(a)] }, s: { rules: [rule(a, { accounting: 'strict' })] } },
    steps: [
      one('refund', 0, 'x', 'nobody', 5, { allowed: true, remaining: 3 }),
      one('check', 0, 'x', 'u'), one('check', 1, 'x', 'u'), one('check', 2, 'x', 'u'),
      one('check', 3, 'x', 'u', 1, a === 'earrrl' ? undefined : { allowed: false }),
      one('refund', 4, 'x', 'u', 1),
      one('check', 5, 'x', 'u', 1, { allowed: true }),
      one('refund', 6, 'x', 'u', 100, { allowed: true }),
      one('check', 7, 'x', 'u', 0),
      // strict: refused attempts were charged; a refund gives back to every rule
      one('check', 10, 's', 'u', 3), one('check', 11, 's', 'u', 3), one('refund', 12, 's', 'u', 3),
      one('check', 13, 's', 'u', 0),
    ],
  };
}

export const scenarios: Scenario[] = [
  ...ALGORITHMS.map(vetoed),
  ...ALGORITHMS.map(refunds),
  {
    name: 'three items, the middle one refuses: neither other is charged; then all three admit',
    limiters: { a: { rules: [rule('fixedWindow')] }, b: { rules: [rule('slidingLog', { limit: 1 })] }, c: { rules: [rule('tokenBucket'), rule('slidingWindow', { limit: 5, name: 'five' })] } },
    steps: [
      all(0, [{ lim: 'a', key: 'k' }, { lim: 'b', key: 'k' }, { lim: 'c', key: 'k' }], { allowed: true }),
      all(1, [{ lim: 'a', key: 'k' }, { lim: 'b', key: 'k' }, { lim: 'c', key: 'k' }], { allowed: false, refusedBy: 1, decisions: [{ allowed: true, remaining: 2 }, { allowed: false }, { allowed: true, remaining: 2 }] }),
      all(2, [{ lim: 'a', key: 'k' }, { lim: 'b', key: 'other' }, { lim: 'c', key: 'k' }], { allowed: true, decisions: [{ remaining: 1 }, { remaining: 0 }, { remaining: 1 }] }),
      all(3, [{ lim: 'a', key: 'k' }, { lim: 'c', key: 'k' }], { allowed: true, decisions: [{ remaining: 0 }, { remaining: 0 }] }),
      all(4, [{ lim: 'a', key: 'k' }, { lim: 'c', key: 'k' }], { allowed: false, refusedBy: 0 }),
    ],
  },
  {
    name: 'strict rules of an item refused elsewhere are charged, its leaky ones are not',
    limiters: { x: { rules: [rule('fixedWindow', { accounting: 'strict', name: 'strict' }), rule('gcra', { name: 'leaky' })] }, gate },
    steps: [
      all(0, [{ lim: 'x', key: 'u' }, { lim: 'gate', key: 'g' }], { allowed: true, decisions: [{ remaining: 2 }] }),
      all(1, [{ lim: 'x', key: 'u' }, { lim: 'gate', key: 'g' }], { allowed: false, decisions: [{ allowed: true, remaining: 1 }] }),
      all(2, [{ lim: 'x', key: 'u' }, { lim: 'gate', key: 'g' }], { allowed: false, decisions: [{ allowed: true, remaining: 0 }] }),
      // the strict window holds 3 now: refused, though the gcra rule was charged only once
      one('check', 3, 'x', 'u', 1, { allowed: false, reason: 'limited' }),
      one('check', 10_000, 'x', 'u', 1, { allowed: true }),
    ],
  },
  {
    name: 'a blocked item refuses and is not charged; an exempt one admits and is not charged',
    limiters: { a: { rules: [rule('fixedWindow')] }, b: { rules: [rule('gcra')] } },
    steps: [
      { op: 'block', t: 0, lim: 'b', key: 'k', for: 5_000 },
      all(1, [{ lim: 'a', key: 'k' }, { lim: 'b', key: 'k' }], { allowed: false, refusedBy: 1, decisions: [{ allowed: true, remaining: 3 }, { allowed: false, reason: 'blocked' }] }),
      { op: 'exempt', t: 2, lim: 'b', key: 'k' },
      all(3, [{ lim: 'a', key: 'k' }, { lim: 'b', key: 'k', cost: 50 }], { allowed: true, decisions: [{ remaining: 2 }, { allowed: true, reason: 'exempt' }] }),
      { op: 'block', t: 4, lim: 'a', key: 'k' },
      all(5, [{ lim: 'b', key: 'k' }, { lim: 'a', key: 'k' }], { allowed: false, refusedBy: 1, decisions: [{ reason: 'exempt' }, { reason: 'blocked', retryAfter: Infinity }] }),
      one('check', 6, 'b', 'other', 3, { allowed: true, remaining: 0 }),
    ],
  },
  {
    name: 'a dry-run item never refuses; refused elsewhere, it changes as enforcement would (leaky: nothing)',
    limiters: { d: { rules: [rule('gcra', { limit: 1 })], dryRun: true }, a: { rules: [rule('fixedWindow', { limit: 2 })] } },
    steps: [
      all(0, [{ lim: 'd', key: 'k' }, { lim: 'a', key: 'k' }], { allowed: true, decisions: [{ reason: 'allowed' }, { remaining: 1 }] }),
      all(1, [{ lim: 'd', key: 'k' }, { lim: 'a', key: 'k' }], { allowed: true, decisions: [{ allowed: true, reason: 'dry-run' }, { remaining: 0 }] }),
      all(2, [{ lim: 'd', key: 'fresh' }, { lim: 'a', key: 'k' }], { allowed: false, refusedBy: 1, decisions: [{ allowed: true, reason: 'allowed' }, { allowed: false }] }),
      // 'fresh' was vetoed: as enforcement would have it, not charged
      one('check', 3, 'd', 'fresh', 1, { allowed: true, reason: 'allowed' }),
    ],
  },
  {
    name: 'costs: fractional, zero, over the limit; the same limiter and key twice are one request of the summed cost',
    limiters: { a: { rules: [rule('slidingWindow')] }, b: { rules: [rule('tokenBucket', { burst: 4 })] } },
    steps: [
      all(0, [{ lim: 'a', key: 'k', cost: 1.5 }, { lim: 'b', key: 'k', cost: 0 }], { allowed: true, decisions: [{ remaining: 1 }, { remaining: 4 }] }),
      all(1, [{ lim: 'a', key: 'k', cost: 1 }, { lim: 'b', key: 'k', cost: 5 }], { allowed: false, refusedBy: 1, decisions: [{ allowed: true }, { allowed: false, retryAfter: Infinity }] }),
      all(2, [{ lim: 'a', key: 'k', cost: 1 }, { lim: 'a', key: 'k', cost: 1 }], { allowed: false, refusedBy: 0 }),
      all(3, [{ lim: 'a', key: 'k', cost: 0.75 }, { lim: 'b', key: 'k', cost: 2 }, { lim: 'a', key: 'k', cost: 0.75 }], { allowed: true, decisions: [{ remaining: 0 }, { remaining: 2 }, { remaining: 0 }] }),
      one('check', 4, 'a', 'k', 0.0001, { allowed: false }),
    ],
  },
];

/** run — every step of a scenario with limiters on `store` (fresh limiters: their own policies). */
export async function run(store: Store, s: Scenario): Promise<Out[]> {
  const lims: Record<string, Limiter> = {};
  for (const [name, o] of Object.entries(s.limiters)) lims[name] = limiter({ rules: o.rules, dryRun: o.dryRun, store });
  const out: Out[] = [];
  for (const st of s.steps) {
    const now = T0 + st.t;
    switch (st.op) {
      case 'all': {
        const r = await checkAll(st.items.map((i) => ({ limiter: lims[i.lim], key: i.key, cost: i.cost })), { now });
        out.push({ allowed: r.allowed, refusedBy: r.refusedBy, decisions: r.decisions });
        break;
      }
      case 'check': out.push(await lims[st.lim].check(st.key, { now, cost: st.cost })); break;
      case 'refund': out.push(await lims[st.lim].refund(st.key, { now, cost: st.cost })); break;
      case 'block': case 'exempt':
        // overrides set at the step's time (the bound store takes an explicit time, as the conformance runner does)
        await lims[st.lim].bound.setOverride(st.key, { kind: st.op, for: st.for ?? Infinity }, now);
        out.push(undefined);
        break;
    }
  }
  return out;
}

/** checkExpectations — the steps' expectations. */
export function checkExpectations(s: Scenario, outs: Out[]): void {
  s.steps.forEach((st, i) => {
    if (!('expect' in st) || st.expect === undefined) return;
    const where = `${s.name} step ${i} (t=${st.t})`;
    const o = outs[i] as Exclude<Out, undefined>;
    if (st.op === 'all') {
      const e = st.expect as Extract<Step, { op: 'all' }>['expect'] & object;
      const r = o as { allowed: boolean; refusedBy: number; decisions: Decision[] };
      assert.equal(r.allowed, e.allowed, `${where}: allowed`);
      if (e.refusedBy !== undefined) assert.equal(r.refusedBy, e.refusedBy, `${where}: refusedBy`);
      e.decisions?.forEach((x, j) => x && fieldsAre(r.decisions[j], x, `${where} decision ${j}`));
    } else {
      fieldsAre(o as Decision, st.expect as Expect, where);
    }
  });
}

function fieldsAre(d: Decision, e: Expect, where: string): void {
  for (const [k, v] of Object.entries(e)) assert.equal((d as unknown as Record<string, unknown>)[k], v, `${where}: ${k}`);
}

/** compare — a store's outputs equal the memory store's; `verdictsOnly`: the compound verdicts and each decision's `allowed`. */
export function compare(s: Scenario, ref: Out[], got: Out[], verdictsOnly = false): void {
  s.steps.forEach((st, i) => {
    const where = `${s.name} step ${i} (${st.op} t=${st.t})`;
    if (!verdictsOnly) return same(got[i], ref[i], where);
    const a = got[i] as { allowed: boolean; decisions?: Decision[] } | undefined;
    const b = ref[i] as { allowed: boolean; decisions?: Decision[] } | undefined;
    assert.equal(a?.allowed, b?.allowed, `${where}: allowed`);
    a?.decisions?.forEach((d, j) => assert.equal(d.allowed, b?.decisions?.[j].allowed, `${where} decision ${j}: allowed`));
  });
}
