/**
 * succession — the scenarios of a rule change that carries the clients' state over (issue 15, section 4): shared
 * by the memory store (test/core/succession.test.ts) and Redis (test/redis/succession.test.ts). Every request has an
 * explicit time; all requests of a scenario happen at T0, the start of a minute, and the rules change at T0.
 */
import assert from 'node:assert/strict';
import { limiter, rules, type Limiter, type RuleConfig, type Store } from '../../src/index.js';
import type { Algorithm } from '../../src/core/types.js';

/** T0 — the start of a minute (windows are aligned to the epoch), ms. */
export const T0 = 1_700_000_040_000;
export const MINUTE = 60_000;

export const ALGORITHMS: readonly Algorithm[] = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'earrrl', 'exponential'];
/** COUNTED — the algorithms whose state is a used amount of cost (the count sense is exact for them). */
export const COUNTED: readonly Algorithm[] = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra'];

/** HALF_LIFE — earrrl's half-life, ms: long enough that a fresh client may send 2 at once under 2/min, 50 under 100/min. */
export const HALF_LIFE = 30_000;

/** rule — `limit` per minute with `algorithm`, leaky accounting (a refused probe charges nothing), earrrl's half-life HALF_LIFE. */
export function rule(algorithm: Algorithm, limit: number): RuleConfig {
  const o = { limit, per: '1m' as const, accounting: 'leaky' as const };
  switch (algorithm) {
    case 'earrrl': return rules.earrrl({ ...o, halfLife: HALF_LIFE });
    default: return rules[algorithm](o);
  }
}

/**
 * expectedWait — for 50 requests at T0 under 100/min and then 2/min, ms from T0 until a request of cost 1 is admitted
 * again under the new rule, per algorithm (undefined: checked by the probes only).
 */
export function expectedWait(algorithm: Algorithm): number | undefined {
  switch (algorithm) {
    case 'fixedWindow': return MINUTE; // the window's 50 are forgiven when it ends
    case 'slidingLog': return MINUTE; // all 50 slide out of the window at once
    case 'slidingWindow': return MINUTE + MINUTE * (49 / 50); // 50·(1 − x/per) + 1 <= 2 in the next window
    case 'tokenBucket': case 'leakyBucket': case 'gcra': return 49 / (2 / MINUTE); // 49 of the 50 drained at 2/min
    case 'earrrl': {
      const lambda = Math.LN2 / HALF_LIFE;
      return Math.log((50 * lambda) / (2 / MINUTE)) / lambda; // the estimate 50·λ decays under 2/min
    }
    default: return undefined;
  }
}

/**
 * make — a limiter of one rule on `store`, succeeding `old` when given (`lazy`: by succeed(old, { lazy: true })), named
 * `id` (a shared store names the state by it: test/redis/succession.test.ts); its clock reads T0 (the time of the change).
 */
export function make(store: Store, r: RuleConfig, old?: Limiter, id = 'the-limit', lazy = false): Limiter {
  if (!lazy || old === undefined) return limiter({ rules: [r], store, succeeds: old, clock: { now: () => T0 }, id });
  // lazy: built beside the old one, then made its successor in O(1) (what the service does at a reload's swap); the
  // takeover happens at its first call, converted as of the succeed call
  const lim = limiter({ rules: [r], store, clock: { now: () => T0 }, id });
  assert.equal(lim.succeed(old, { lazy: true }), true, 'compatible rules');
  assert.equal(lim.pending, true, 'nothing taken over before its first call');
  return lim;
}

/** spend — `n` requests of cost 1 for `key` at `now`, each admitted (asserted). */
export async function spend(lim: Limiter, key: string, n: number, now: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const d = await lim.check(key, { now });
    assert.equal(d.allowed, true, `request ${i + 1} of ${n} admitted`);
  }
}

/** raised — 2 of 2/min used, then the limit raised to 100/min: 98 left (not 100: the 2 carry; not 0). */
export async function raised(store: Store, algorithm: Algorithm, key: string, lazy = false): Promise<void> {
  const old = make(store, rule(algorithm, 2));
  await spend(old, key, 2, T0);
  assert.equal((await old.check(key, { now: T0 })).allowed, false, 'the third request of 2/min is refused');
  const lim = make(store, rule(algorithm, 100), old, undefined, lazy);
  const fresh = (await lim.peek(`${key}:never-seen`, { now: T0 })).remaining;
  const left = (await lim.peek(key, { now: T0 })).remaining;
  if (COUNTED.includes(algorithm)) {
    assert.equal(left, 98, `${algorithm}: 2 used of 2/min leaves 98 of 100/min`);
    await spend(lim, key, 98, T0);
    assert.equal((await lim.check(key, { now: T0 })).allowed, false, 'the 99th after the change is refused');
  } else {
    // a rate estimate: it carries, so the client has less than a fresh one
    assert.ok(left < fresh && left >= fresh - 3, `${algorithm}: ${left} left, a fresh client ${fresh}`);
  }
}

/**
 * lowered — 50 of 100/min used, then the limit lowered to 2/min: refused until enough of the 50 age out (exactly
 * when: expectedWait), then admitted.
 */
export async function lowered(store: Store, algorithm: Algorithm, key: string, lazy = false): Promise<void> {
  const old = make(store, rule(algorithm, 100));
  await spend(old, key, 50, T0);
  const lim = make(store, rule(algorithm, 2), old, undefined, lazy);
  const d = await lim.check(key, { now: T0 });
  assert.equal(d.allowed, false, `${algorithm}: 50 used of 100/min is refused under 2/min`);
  const wait = d.retryAfter;
  const expected = expectedWait(algorithm);
  if (expected !== undefined) assert.ok(Math.abs(wait - expected) < 1e-3, `${algorithm}: retryAfter ${wait}, expected ${expected}`);
  assert.ok(wait > 1 && Number.isFinite(wait), `${algorithm}: a finite wait, ${wait}`);
  const early = await lim.check(key, { now: T0 + wait - 1 });
  assert.equal(early.allowed, false, `${algorithm}: still refused 1 ms before (retryAfter ${wait}: ${JSON.stringify(early)})`);
  assert.equal((await lim.check(key, { now: T0 + wait })).allowed, true, `${algorithm}: admitted at T0 + retryAfter`);
}
