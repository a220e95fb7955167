/**
 * test/conformance/scenarios — THE table every store runs: each scenario is a policy and a list of steps
 * (key, op, t, cost…) with explicit times, and every store must give the same decisions (estimates within 1e-9
 * relative). Some steps also state what the decision must be, so that the table checks itself against the
 * contract and not only store against store.
 */
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import type { Decision, Algorithm } from '../../src/core/types.js';
import { rules } from '../../src/core/rules.js';

/** T0 — a realistic epoch time in ms (window alignment and float rounding as in production), plus a fraction. */
export const T0 = 1_763_726_400_000.25;

export type Op = 'check' | 'block' | 'unblock' | 'exempt' | 'unexempt' | 'reset';

/** Step — one operation at ms `t` after T0. `for` (block/exempt) is ms; without it the override lasts until lifted. */
export interface Step {
  op: Op;
  key: string;
  t: number;
  cost?: number;
  for?: number;
  reason?: string;
  /** expect — fields the decision must have (checked on every store). */
  expect?: Partial<Pick<Decision, 'allowed' | 'reason' | 'remaining' | 'retryAfter' | 'resetAfter' | 'delay' | 'blockReason'>>;
}

export interface Scenario {
  name: string;
  rules: RuleConfig[];
  dryRun?: boolean;
  /** autoBlock — the policy's automatic block (PolicyOptions.autoBlock: `for` in ms). */
  autoBlock?: { for: number; reason?: string };
  /** boundary — the extremes of the documented range, whose expiries no store can set as they are (Redis PX). */
  boundary?: boolean;
  steps: Step[];
}

const c = (t: number, cost = 1, key = 'k', expect?: Step['expect']): Step => ({ op: 'check', key, t, cost, ...(expect ? { expect } : {}) });

/** burstRule — every algorithm with limit 3 per 10 s (earrrl: half-life 5 s). */
function rule(algorithm: Algorithm, extra: Record<string, unknown> = {}): RuleConfig {
  const o = { limit: 3, per: 10_000, ...extra };
  if (algorithm === 'earrrl') return rules.earrrl({ halfLife: 5_000, ...o });
  return (rules[algorithm] as (x: typeof o) => RuleConfig)(o);
}

const ALGORITHMS: Algorithm[] = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'];

/** basic — a burst to the limit and past it, retries before and after the wait, fractional and zero costs, a cost over the limit. */
function basic(a: Algorithm, accounting: 'leaky' | 'strict'): Scenario {
  return {
    name: `${a} ${accounting}: burst, denials, costs, recovery`,
    rules: [rule(a, { accounting })],
    steps: [
      c(0, 0, 'k', { allowed: true }), c(0), c(1), c(2.5), c(3), c(4), c(5, 0),
      c(700), c(1_900.75), c(3_333), c(3_334, 0.5), c(4_000, 2), c(5_000, 0.25), c(6_000, 7),
      c(9_999), c(10_000), c(10_001), c(12_500, 1.5), c(15_000), c(19_999.5), c(20_000), c(21_000, 3), c(45_000), c(60_000, 0),
      c(200_000), c(200_000), c(200_000), c(200_000), c(200_001),
    ],
  };
}

/** backwards — a clock that steps back: no rule admits more than it would at the latest time it has seen. */
function backwards(a: Algorithm): Scenario {
  return {
    name: `${a}: clock stepping back`,
    rules: [rule(a)],
    steps: [c(5_000), c(5_000), c(4_000), c(-6_000), c(5_001), c(4_999.5, 0), c(9_000), c(8_000), c(30_000), c(29_000), c(12_000), c(31_000)],
  };
}

/** spaced — a steady client just over and just under the rate: the rate estimates and smooth delays matter here. */
function spaced(a: Algorithm): Scenario {
  const steps: Step[] = [];
  for (let i = 0; i < 12; i++) steps.push(c(i * 2_500));
  for (let i = 0; i < 12; i++) steps.push(c(40_000 + i * 3_700, 0.8));
  return { name: `${a}: steady traffic around the rate`, rules: [rule(a, a === 'tokenBucket' || a === 'leakyBucket' || a === 'gcra' ? { burst: 2 } : {})], steps };
}

/**
 * behind — the clock steps back behind the stored update time (tokenBucket, leakyBucket, earrrl, exponential):
 * nothing refills or decays before the stored time, so every wait, reset and leaky delay counts from it — the lag
 * (stored time − now) plus what the state needs from there. Each refusal is retried one ms before its retryAfter
 * (still refused) and at it (admitted): retryAfter stays exact across the step back. All leaky, so a refusal
 * changes nothing.
 */
const LAMBDA = Math.LN2 / 5_000; // earrrl below: halfLife 5 s, λ per ms
const THRESHOLD = 3 / 10_000; // earrrl below: 3 per 10 s, per ms
const EARRRL_WAIT = 3_000 + Math.log((3 * LAMBDA) / THRESHOLD) / LAMBDA; // three impulses at t = 10 000, seen from t = 7 000
const behind: Scenario[] = [
  {
    name: 'tokenBucket: behind the stored time, retryAfter and resetAfter count from it',
    rules: [rules.tokenBucket({ limit: 3, per: 3_000 })], // one token per second
    steps: [
      c(10_000), c(10_000), c(10_000, 1, 'k', { allowed: true, remaining: 0, resetAfter: 3_000 }),
      // at 7 000 the bucket is still empty as of 10 000: one token takes 3 000 (lag) + 1 000 ms, a full bucket 3 000 + 3 000
      c(7_000, 1, 'k', { allowed: false, retryAfter: 4_000, resetAfter: 6_000 }),
      c(10_999, 1, 'k', { allowed: false }), c(11_000, 1, 'k', { allowed: true, remaining: 0 }),
      c(9_000, 2, 'k', { allowed: false, retryAfter: 2_000 + 2_000, resetAfter: 2_000 + 3_000 }),
    ],
  },
  {
    name: 'leakyBucket: behind the stored time, delay, retryAfter and resetAfter count from it',
    rules: [rules.leakyBucket({ limit: 3, per: 3_000 })], // drains one per second
    steps: [
      c(10_000, 1, 'k', { allowed: true, delay: 0 }), c(10_000, 1, 'k', { allowed: true, delay: 1_000 }),
      // level 2 as of 10 000, seen from 9 000: the queue ahead drains from 10 000 on
      c(9_000, 1, 'k', { allowed: true, delay: 1_000 + 2_000, resetAfter: 1_000 + 3_000 }),
      c(8_000, 1, 'k', { allowed: false, retryAfter: 2_000 + 1_000, resetAfter: 2_000 + 3_000 }),
      c(10_999, 1, 'k', { allowed: false }), c(11_000, 1, 'k', { allowed: true, delay: 2_000 }),
      c(10_500, 0, 'k', { allowed: true, resetAfter: 500 + 3_000 }),
    ],
  },
  {
    name: 'earrrl: behind the stored time, retryAfter and resetAfter count from it',
    rules: [rules.earrrl({ limit: 3, per: 10_000, halfLife: 5_000, accounting: 'leaky' })],
    steps: [
      c(10_000), c(10_000), c(10_000), c(10_000, 1, 'k', { allowed: false }),
      // the impulse of 3 only starts decaying at 10 000: from 7 000, 3 000 ms of lag, then its decay to the threshold
      c(7_000, 1, 'k', { allowed: false, retryAfter: EARRRL_WAIT, resetAfter: 3_000 + Math.log((3 * LAMBDA) / (THRESHOLD * 1e-6)) / LAMBDA }),
      c(7_000 + EARRRL_WAIT - 1, 1, 'k', { allowed: false }), c(7_000 + EARRRL_WAIT, 1, 'k', { allowed: true }),
    ],
  },
  {
    name: 'exponential: behind the stored time, resetAfter counts from it',
    rules: [rules.exponential({ limit: 3, per: 10_000 })],
    steps: [
      c(10_000), c(10_000), c(10_000), c(10_000, 1, 'k', { allowed: false }),
      // an average of 3 per period as of 10 000, forgotten to 3e-6 of the limit (NEGLIGIBLE) in per·ln(1e6) from there
      c(7_000, 1, 'k', { allowed: false, resetAfter: 3_000 + 10_000 * Math.log(1e6) }),
      c(7_000, 0, 'k', { allowed: true, resetAfter: 3_000 + 10_000 * Math.log(1e6) }),
      c(20_000, 1, 'k', { allowed: true }),
    ],
  },
];

export const scenarios: Scenario[] = [
  ...ALGORITHMS.flatMap((a) => [basic(a, 'leaky'), basic(a, 'strict'), backwards(a), spaced(a)]),
  ...behind,
  {
    name: 'fixedWindow: a fresh burst is admitted and retryAfter is exact',
    rules: [rules.fixedWindow({ limit: 2, per: 10_000 })],
    steps: [
      c(0, 1, 'k', { allowed: true, remaining: 1 }), c(1, 1, 'k', { allowed: true, remaining: 0 }),
      c(2, 1, 'k', { allowed: false, reason: 'limited', retryAfter: 10_000 - 2 - (T0 % 10_000) }),
      c(10_000 - (T0 % 10_000) - 1, 1, 'k', { allowed: false }), c(10_000 - (T0 % 10_000), 1, 'k', { allowed: true }),
      c(10_001, 5, 'k', { allowed: false, retryAfter: Infinity }),
    ],
  },
  {
    name: 'all-or-nothing: a refusal by one rule charges no other (leaky)',
    rules: [rules.tokenBucket({ limit: 5, per: 10_000 }), rules.fixedWindow({ limit: 3, per: 10_000 }), rules.exponential({ limit: 4, per: 10_000 })],
    steps: [c(0), c(1), c(2), c(3, 1, 'k', { allowed: false }), c(4, 1, 'k', { allowed: false }), c(5, 0), c(12_000), c(12_001, 2), c(13_000), c(30_000, 3)],
  },
  {
    name: 'all-or-nothing: strict rules are charged by a refusal, leaky ones are not',
    rules: [rules.gcra({ limit: 2, per: 10_000, accounting: 'strict' }), rules.slidingWindow({ limit: 4, per: 10_000 }), rules.earrrl({ limit: 5, per: 10_000, halfLife: 4_000 })],
    steps: [c(0), c(1), c(2), c(3), c(4), c(4_000), c(6_000), c(9_000), c(15_000), c(21_000), c(40_000), c(40_001), c(80_000)],
  },
  {
    name: 'four rules of four algorithms',
    rules: [rules.gcra({ limit: 10, per: 1_000, burst: 3 }), rules.slidingLog({ limit: 20, per: 60_000 }), rules.earrrl({ limit: 30, per: 60_000, halfLife: 10_000 }), rules.leakyBucket({ limit: 5, per: 1_000, burst: 4 })],
    steps: Array.from({ length: 40 }, (_, i) => c(i * 150 + (i % 3) * 0.5)),
  },
  {
    name: 'sliding logs share one log (leaky): 2 per 1 s and 5 per 10 s',
    rules: [rules.slidingLog({ limit: 2, per: 1_000 }), rules.slidingLog({ limit: 5, per: 10_000 })],
    steps: [c(0), c(0), c(0), c(500), c(1_000), c(1_000.5), c(1_999), c(2_001), c(2_500), c(3_000), c(9_999), c(10_000), c(10_001), c(11_000, 2), c(12_000, 0.5), c(12_000, 0.5), c(25_000, 5), c(25_000, 6)],
  },
  {
    name: 'sliding logs share one log (strict): hammering keeps the client out',
    rules: [rules.slidingLog({ limit: 2, per: 1_000, accounting: 'strict' }), rules.slidingLog({ limit: 4, per: 5_000, accounting: 'strict' })],
    steps: [c(0), c(100), c(200), c(300), c(900), c(1_100), c(1_250), c(2_000), c(4_000), c(6_000), c(6_001), c(7_500), c(12_000)],
  },
  {
    name: 'slidingLog: many entries are trimmed to what the rules can see',
    rules: [rules.slidingLog({ limit: 50, per: 2_000 })],
    steps: Array.from({ length: 150 }, (_, i) => c(i * 29 + (i % 7) * 0.25, i % 5 === 0 ? 2 : 1)),
  },
  {
    name: 'blocks: with and without a duration, with a reason; charging nothing',
    rules: [rules.tokenBucket({ limit: 2, per: 10_000 }), rules.earrrl({ limit: 3, per: 10_000, halfLife: 5_000 })],
    steps: [
      c(0),
      { op: 'block', key: 'k', t: 10, for: 60_000, reason: 'abuse' },
      c(20, 1, 'k', { allowed: false, reason: 'blocked', retryAfter: 59_990 }), c(30, 0),
      c(60_009, 1, 'k', { allowed: false }), c(60_010, 1, 'k', { allowed: true }),
      { op: 'block', key: 'k', t: 61_000 },
      c(61_001, 1, 'k', { allowed: false, retryAfter: Infinity }), c(90_000),
      { op: 'unblock', key: 'k', t: 91_000 }, c(91_001, 1, 'k', { allowed: true }),
      { op: 'block', key: 'k', t: 92_000, for: 0 }, c(92_001),
      { op: 'block', key: 'other', t: 93_000, for: 50_000 }, c(93_001), c(93_002, 1, 'other'),
    ],
  },
  {
    name: 'exemptions: the later of block and exempt wins; unblock does not lift an exemption',
    rules: [rules.fixedWindow({ limit: 1, per: 100_000 })],
    steps: [
      c(0), c(1, 1, 'k', { allowed: false }),
      { op: 'exempt', key: 'k', t: 2, for: 30_000 }, c(3, 1, 'k', { allowed: true, reason: 'exempt' }), c(4, 5),
      { op: 'unblock', key: 'k', t: 5 }, c(6, 1, 'k', { reason: 'exempt' }),
      { op: 'block', key: 'k', t: 7, reason: 'manual' }, c(8, 1, 'k', { reason: 'blocked' }),
      { op: 'exempt', key: 'k', t: 9 }, c(10, 1, 'k', { reason: 'exempt' }),
      { op: 'unexempt', key: 'k', t: 11 }, c(12, 1, 'k', { allowed: false, reason: 'limited' }),
      { op: 'exempt', key: 'k', t: 13, for: 1_000 }, c(1_012), c(1_013, 1, 'k', { reason: 'limited' }),
    ],
  },
  {
    name: 'reset clears rule state, not blocks',
    rules: [rules.gcra({ limit: 1, per: 100_000, name: 'gcra' }), rules.slidingLog({ limit: 1, per: 100_000, name: 'log' })],
    steps: [
      c(0), c(1, 1, 'k', { allowed: false }), { op: 'reset', key: 'k', t: 2 }, c(3, 1, 'k', { allowed: true }),
      { op: 'block', key: 'k', t: 4, for: 50_000 }, { op: 'reset', key: 'k', t: 5 }, c(6, 1, 'k', { reason: 'blocked' }),
      { op: 'reset', key: 'never-seen', t: 7 }, c(8, 1, 'never-seen', { allowed: true }),
    ],
  },
  {
    name: 'dry-run: state changes as if enforced, every request admitted, blocks too',
    dryRun: true,
    rules: [rules.slidingWindow({ limit: 2, per: 10_000 }), rules.exponential({ limit: 3, per: 10_000, accounting: 'strict' })],
    steps: [
      c(0), c(1), c(2, 1, 'k', { allowed: true, reason: 'dry-run' }), c(3), c(15_000), c(15_001),
      { op: 'block', key: 'k', t: 15_002, for: 1_000 }, c(15_003, 1, 'k', { allowed: true, reason: 'dry-run' }), c(16_002),
    ],
  },
  {
    name: 'a short block: retryAfter includes the wait of the rules that would still refuse',
    rules: [rules.fixedWindow({ limit: 1, per: 10_000, name: 'fw' }), rules.tokenBucket({ limit: 1, per: 10_000, name: 'tb' }),
      rules.fixedWindow({ limit: 5, per: 10_000, accounting: 'strict', name: 'strict' })],
    steps: [
      c(0), { op: 'block', key: 'k', t: 1, for: 1_000 },
      c(2, 1, 'k', { reason: 'blocked', retryAfter: 9_998 }), c(3, 2, 'k', { reason: 'blocked', retryAfter: Infinity }),
      c(1_001, 1, 'k', { reason: 'limited', retryAfter: 8_999 }), c(10_000, 1, 'k', { allowed: true }),
    ],
  },
  {
    name: 'autoBlock: the first refusal blocks for its duration from then (retryAfter the block\'s end), charging nothing meanwhile',
    rules: [rules.fixedWindow({ limit: 3, per: 10_000 })],
    autoBlock: { for: 60_000 },
    steps: [
      c(0), c(1), c(2, 1, 'k', { allowed: true, remaining: 0 }),
      c(3, 1, 'k', { allowed: false, reason: 'limited', retryAfter: 60_000 }),
      c(4, 1, 'k', { allowed: false, reason: 'blocked', retryAfter: 59_999, blockReason: 'automatic: refused at 3/10s' }),
      c(5, 0, 'k', { allowed: false, reason: 'blocked' }), c(10_001, 1, 'k', { reason: 'blocked', retryAfter: 50_002 }),
      c(60_002, 1, 'k', { reason: 'blocked', retryAfter: 1 }), c(60_003, 1, 'k', { allowed: true, reason: 'allowed' }),
      c(60_004, 2, 'k', { allowed: true }), c(60_005, 1, 'k', { reason: 'limited', retryAfter: 60_000 }),
      c(60_006, 1, 'other', { allowed: true }),
    ],
  },
  {
    name: 'autoBlock: a rule that waits longer than the block sets retryAfter; a refusal after the block blocks again',
    rules: [rules.tokenBucket({ limit: 1, per: 100_000, name: 'slow' }), rules.fixedWindow({ limit: 10, per: 1_000, name: 'fast' })],
    autoBlock: { for: 1_000, reason: 'too fast' },
    steps: [
      c(0), c(1, 1, 'k', { reason: 'limited', retryAfter: 99_999 }),
      c(2, 1, 'k', { reason: 'blocked', retryAfter: 99_998, blockReason: 'too fast' }),
      c(1_001, 1, 'k', { reason: 'limited', retryAfter: 98_999 }), c(1_500, 1, 'k', { reason: 'blocked', blockReason: 'too fast' }),
      c(100_000, 1, 'k', { allowed: true }),
    ],
  },
  {
    name: 'autoBlock: unblock lifts it, a manual block or an exemption replaces it; a blocked or exempt client starts none',
    rules: [rules.gcra({ limit: 1, per: 10_000 })],
    autoBlock: { for: 30_000 },
    steps: [
      c(0), c(1, 1, 'k', { reason: 'limited', retryAfter: 30_000 }), c(2, 1, 'k', { reason: 'blocked' }),
      { op: 'unblock', key: 'k', t: 3 }, c(4, 1, 'k', { reason: 'limited', retryAfter: 30_000 }),
      { op: 'block', key: 'k', t: 5, for: 1_000, reason: 'manual' }, c(6, 1, 'k', { reason: 'blocked', blockReason: 'manual', retryAfter: 9_994 }),
      c(1_005, 1, 'k', { reason: 'limited', retryAfter: 30_000 }),
      { op: 'exempt', key: 'k', t: 1_006 }, c(1_007, 5, 'k', { reason: 'exempt' }),
      { op: 'unexempt', key: 'k', t: 1_008 }, c(1_009, 1, 'k', { reason: 'limited', retryAfter: 30_000 }),
      { op: 'reset', key: 'k', t: 1_010 }, c(1_011, 1, 'k', { reason: 'blocked' }),
    ],
  },
  {
    name: 'autoBlock in dry-run: the block is set as if enforced, and every request admitted',
    dryRun: true,
    rules: [rules.slidingLog({ limit: 1, per: 10_000 })],
    autoBlock: { for: 20_000 },
    steps: [
      c(0), c(1, 1, 'k', { allowed: true, reason: 'dry-run', retryAfter: 20_000 }),
      c(2, 1, 'k', { allowed: true, reason: 'dry-run', retryAfter: 19_999 }), c(20_001, 1, 'k', { allowed: true, reason: 'allowed' }),
    ],
  },
  {
    name: 'slidingLog strict: a look (cost 0) sees a window over its limit after the log is trimmed',
    rules: [rules.slidingLog({ limit: 2, per: 1_000, accounting: 'strict' })],
    steps: [c(0), c(1), c(2, 1, 'k', { allowed: false }), c(500, 0, 'k', { allowed: false, retryAfter: 500 }), c(1_000, 0), c(1_001, 0), c(1_002, 0, 'k', { allowed: true })],
  },
  {
    name: 'a limit of a billion admits a billion, not one more (the count tolerance is capped)',
    rules: [rules.fixedWindow({ limit: 1e9, per: 3_600_000, name: 'fw' }), rules.slidingLog({ limit: 1e9, per: 3_600_000, name: 'log' }),
      rules.slidingWindow({ limit: 1e9, per: 3_600_000, name: 'sw' }), rules.tokenBucket({ limit: 1e9, per: 86_400_000_000, name: 'tb' })],
    steps: [c(0, 1e9 - 1, 'k', { allowed: true, remaining: 1 }), c(0, 1, 'k', { allowed: true, remaining: 0 }), c(0, 1, 'k', { allowed: false, remaining: 0 })],
  },
  {
    name: 'high-rate rules report at most their burst or limit: the 10 µs time slack does not show in remaining',
    rules: [rules.gcra({ limit: 100, per: 1, name: 'gcra' }), rules.gcra({ limit: 1e6, per: 1_000, name: 'gcra2' })],
    steps: [c(0, 0, 'k', { remaining: 100 }), c(0, 1, 'k', { allowed: true })],
  },
  {
    name: 'high-rate token and leaky buckets report at most their burst',
    rules: [rules.tokenBucket({ limit: 100, per: 1, name: 'tb' }), rules.leakyBucket({ limit: 1e6, per: 1_000, name: 'lb' })],
    steps: [c(0, 0, 'k', { remaining: 100 }), c(0, 0, 'other', { remaining: 100 }), c(10, 1, 'k', { allowed: true })],
  },
  {
    name: 'a high-rate slidingWindow reports at most its limit as the previous window slides out',
    // windows start at T0 − 0.25; at t = 1 999.745 the previous window weighs 5e-6 (5 units), less than the 10 units
    // the time slack tolerates at 1e6 per second. (Periods of a few ms would expire the Redis key in real time.)
    rules: [rules.slidingWindow({ limit: 1e6, per: 1_000, name: 'sw' })],
    steps: [c(0, 1e6, 'k', { allowed: true, remaining: 0 }), c(1_999.745, 0, 'k', { remaining: 1e6 }), c(1_999.745, 1, 'k', { allowed: true })],
  },
  ...ALGORITHMS.map((a): Scenario => ({
    name: `${a}: the bounds of the range (limit, burst and cost 1e15, per and halfLife 1e12 ms)`,
    rules: [a === 'earrrl' ? rules.earrrl({ limit: 1e15, per: 1e12, halfLife: 1e12 }) : rules[a]({ limit: 1e15, per: 1e12 })],
    steps: [c(0, 1e15, 'k', { allowed: true }), c(1, 1e15), c(2, 0), c(3, 0, 'fresh', { allowed: true })],
  })),
  ...ALGORITHMS.map((a): Scenario => ({
    name: `${a} strict: a cost of 1e15 against the smallest limit over the longest period (expiries past any store's reach)`,
    boundary: true,
    rules: [a === 'earrrl' ? rules.earrrl({ limit: 1e-6, per: 1e12, halfLife: 1e12 }) : rules[a]({ limit: 1e-6, per: 1e12, accounting: 'strict' })],
    // earrrl decides on the estimate before the request: a fresh client's first request passes whatever its cost
    steps: [c(0, 1e15, 'k', { allowed: a === 'earrrl' }), c(1, 1e15, 'k', { allowed: false }), c(2, 0), c(3, 1e-6, 'k', { allowed: false }), c(4, 1e-6, 'fresh', { allowed: true })],
  })),
  {
    name: 'a fixed window of a billion reports a billion − 1 remaining after one request, not a billion',
    rules: [rules.fixedWindow({ limit: 1e9, per: 3_600_000 })],
    steps: [c(0, 1, 'k', { allowed: true, remaining: 1e9 - 1 }), c(1, 1, 'k', { allowed: true, remaining: 1e9 - 2 })],
  },
  {
    name: 'keys with braces and escapes are distinct clients',
    rules: [rules.fixedWindow({ limit: 1, per: 100_000 })],
    steps: ['a', '{a}', 'a}', '}a{', '{', '}', '%7D', '%', 'a%7Db', 'a}b', '{a}b', 'x{a}', '\ud800', '\udc00', 'é{}'].flatMap((key, i) => [
      c(i, 1, key, { allowed: true }), c(i + 0.5, 1, key, { allowed: false }),
    ]),
  },
];
