/**
 * A limiter that succeeds another (its rules changed) on the memory store: compatible rules carry every client's state,
 * block and exemption over, judged by the new rules in the count sense; other changes start fresh.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { limiter, rules, memoryStore, checkAll, Policy, type MemoryTable, type RuleConfig } from '../../src/index.js';
import { ALGORITHMS, T0, MINUTE, lowered, raised, rule, make, spend } from '../conformance/succession.js';

describe('succession on the memory store: the examples of issue 15', () => {
  for (const a of ALGORITHMS) {
    it(`${a}: 2 used of 2/min, then 100/min: 98 left`, () => raised(memoryStore(), a, 'k'));
    it(`${a}: 50 used of 100/min, then 2/min: refused until enough age out`, () => lowered(memoryStore(), a, 'k'));
    it(`${a}: the same, the takeover lazy (succeed(old, { lazy: true }), done at the first call)`, async () => {
      await raised(memoryStore(), a, 'k', true);
      await lowered(memoryStore(), a, 'k', true);
    });
  }
});

describe('a lazy takeover (succeed(old, { lazy: true }): what a service does at a reload\'s swap)', () => {
  it('converts as of the succeed call, not the first call: a bucket drained at the new rate from the change on', async () => {
    // 50 of 100/min at T0; lowered to 2/min at T0; the first call a minute later. Converted at that call, the old rate
    // would have drained all 50 (forgiven); converted at the change, 49 − 2 are still owed: refused
    const store = memoryStore();
    const old = make(store, rule('tokenBucket', 100));
    await spend(old, 'k', 50, T0);
    const lim = make(store, rule('tokenBucket', 2), old, undefined, true);
    const d = await lim.check('k', { now: T0 + MINUTE });
    assert.equal(d.allowed, false);
    assert.ok(Math.abs(d.retryAfter - (49 / (2 / MINUTE) - MINUTE)) < 1e-3, `retryAfter ${d.retryAfter}`);
    assert.equal(lim.pending, false);
  });

  it('blocks, exemptions and every client carry; nothing is charged twice or forgiven; the table is handed over once', async () => {
    const store = memoryStore();
    const old = make(store, rule('slidingWindow', 10));
    await old.block('bad', { reason: 'abuse' });
    await old.exempt('good', { reason: 'partner' });
    await spend(old, 'mid', 5, T0);
    const lim = make(store, rule('slidingWindow', 6), old, undefined, true);
    const bad = await lim.check('bad', { now: T0 + 1 });
    assert.deepEqual([bad.allowed, bad.reason, bad.blockReason], [false, 'blocked', 'abuse']);
    assert.equal((await lim.check('good', { now: T0 + 1 })).reason, 'exempt');
    assert.equal((await lim.peek('mid', { now: T0 + 1 })).remaining, 1);
    assert.deepEqual((await lim.exemptions({ now: T0 + 1 })).map((e) => [e.key, e.reason]), [['good', 'partner']]);
    assert.equal(lim.bound, old.bound, 'the table itself is handed over');
    assert.equal((lim.bound as MemoryTable).size, 3, 'mid, and the two looked at with a charge (bad, good: nothing stored for them but the slot)');
  });

  it('any first call takes over: a block, a listing, a check through checkAll', async () => {
    const store = memoryStore();
    for (const first of ['block', 'blocks', 'checkAll'] as const) {
      const old = make(store, rule('gcra', 10), undefined, first);
      await spend(old, 'k', 4, T0);
      const lim = make(store, rule('gcra', 5), old, first, true);
      if (first === 'block') await lim.block('x');
      if (first === 'blocks') assert.deepEqual(await lim.blocks({ now: T0 }), []);
      if (first === 'checkAll') assert.equal((await checkAll([{ limiter: lim, key: 'k' }], { now: T0 })).allowed, true);
      assert.equal(lim.pending, false, first);
      assert.equal((await lim.peek('k', { now: T0 })).remaining, first === 'checkAll' ? 0 : 1, `${first}: 4 (or 5) used of 5`);
    }
  });

  it('a second succession while the first is pending: both conversions, in order (no state lost, none revived)', async () => {
    const store = memoryStore();
    const a = make(store, rule('tokenBucket', 100));
    await spend(a, 'k', 50, T0);
    const b = make(store, rule('tokenBucket', 60), a, undefined, true);
    const c = make(store, rule('tokenBucket', 2), b, undefined, true);
    assert.equal(b.pending, true, 'b has not decided anything yet');
    const d = await c.check('k', { now: T0 });
    assert.equal([b.pending, c.pending].join(), 'false,false');
    assert.equal(d.allowed, false, '50 used of 100/min, then 60/min, then 2/min: refused');
    assert.ok(Math.abs(d.retryAfter - 49 / (2 / MINUTE)) < 1e-3, `retryAfter ${d.retryAfter}`);
    // the eager chain says the same
    const store2 = memoryStore();
    const a2 = make(store2, rule('tokenBucket', 100));
    await spend(a2, 'k', 50, T0);
    const c2 = make(store2, rule('tokenBucket', 2), make(store2, rule('tokenBucket', 60), a2));
    assert.deepEqual(await c2.check('k', { now: T0 }), d);
  });

  it('incompatible rules: succeed answers false and records nothing (the clients start fresh)', async () => {
    const store = memoryStore();
    const old = make(store, rule('gcra', 2));
    await spend(old, 'k', 2, T0);
    const lim = limiter({ rules: [rules.gcra({ limit: 2, per: '1s' })], store });
    assert.equal(lim.succeed(old, { lazy: true }), false);
    assert.equal(lim.pending, false);
    assert.equal((await lim.peek('k', { now: T0 })).remaining, 2);
    assert.throws(() => lim.succeed(old, { lazzy: true } as never), /lazzy/);
  });
});

describe('what carries and what starts fresh', () => {
  it('compatible: same number of rules, in order, same algorithm and per; limit, burst, halfLife, accounting may differ', () => {
    const p = (...r: RuleConfig[]) => new Policy({ rules: r });
    const a = p(rules.gcra({ limit: 10, per: '1m' }), rules.slidingLog({ limit: 100, per: '1h' }));
    assert.equal(p(rules.gcra({ limit: 1, per: '1m', burst: 5, accounting: 'strict' }), rules.slidingLog({ limit: 7, per: '1h' })).compatible(a), true);
    assert.equal(p(rules.gcra({ limit: 10, per: '1s' }), rules.slidingLog({ limit: 100, per: '1h' })).compatible(a), false, 'another period');
    assert.equal(p(rules.tokenBucket({ limit: 10, per: '1m' }), rules.slidingLog({ limit: 100, per: '1h' })).compatible(a), false, 'another algorithm');
    assert.equal(p(rules.slidingLog({ limit: 100, per: '1h' }), rules.gcra({ limit: 10, per: '1m' })).compatible(a), false, 'another order');
    assert.equal(p(rules.gcra({ limit: 10, per: '1m' })).compatible(a), false, 'fewer rules');
    assert.equal(p(rules.earrrl({ limit: 10, per: '1m', halfLife: '5s' })).compatible(p(rules.earrrl({ limit: 3, per: '1m', halfLife: '50s' }))), true);
  });

  it('another algorithm or period starts every client fresh', () => {
    const store = memoryStore();
    const old = make(store, rule('gcra', 2));
    const k = 'k';
    return spend(old, k, 2, T0).then(async () => {
      const other = limiter({ rules: [rules.gcra({ limit: 2, per: '1s' })], store, succeeds: old });
      assert.equal((await other.peek(k, { now: T0 })).remaining, 2, 'another period: fresh');
      const third = limiter({ rules: [rules.tokenBucket({ limit: 2, per: '1m' })], store, succeeds: other });
      assert.equal((await third.peek(k, { now: T0 })).remaining, 2, 'another algorithm: fresh');
    });
  });

  it('blocks and exemptions carry over with the state', async () => {
    const store = memoryStore();
    const old = make(store, rule('slidingWindow', 10));
    await old.block('bad', { reason: 'abuse' });
    await old.exempt('good');
    await spend(old, 'mid', 5, T0);
    const lim = make(store, rule('slidingWindow', 6), old);
    const bad = await lim.check('bad', { now: T0 + 1 });
    assert.deepEqual([bad.allowed, bad.reason, bad.blockReason], [false, 'blocked', 'abuse']);
    assert.equal((await lim.check('good', { now: T0 + 1 })).reason, 'exempt');
    assert.equal((await lim.peek('mid', { now: T0 + 1 })).remaining, 1);
    assert.equal(lim.bound, old.bound, 'the table itself is handed over');
  });

  it('the old table is handed over, not copied: the store keeps one table, and detaching the old policy forgets nothing', async () => {
    const store = memoryStore();
    const old = make(store, rule('gcra', 2));
    await spend(old, 'k', 1, T0);
    const lim = make(store, rule('gcra', 4), old);
    store.detach(old.policy);
    assert.equal((lim.bound as MemoryTable).size, 1);
    assert.equal((await lim.peek('k', { now: T0 })).remaining, 3);
  });

  it('a clock that the new limiter reads carries on from the old one\'s (never steps back across a reload)', async () => {
    let now = T0 + 10_000;
    const store = memoryStore();
    const old = limiter({ rules: [rule('tokenBucket', 2)], store, clock: { now: () => now } });
    await old.check('k');
    await old.check('k');
    now = T0; // the new limiter's clock reads earlier: clamped to the old one's latest
    const lim = limiter({ rules: [rule('tokenBucket', 100)], store, clock: { now: () => now }, succeeds: old });
    assert.equal((await lim.peek('k')).remaining, 98);
  });

  it('succeeds must be a limiter', () => {
    assert.throws(() => limiter({ rules: '1/s', succeeds: {} as never }), /succeeds must be the limiter this one replaces/);
  });
});

/**
 * The property: for random histories and random old → new limits and bursts, what the converted state reports equals
 * what the new rule says of the used amount (windows and log: the admitted history's counts; token/leaky bucket and
 * gcra: the debt the old rule had drained to at the change), and it never forgives (never more remaining than that).
 */
describe('property: the conversion keeps the used amount, judged by the new rule', () => {
  type Step = { gap: number; cost: number };
  const COUNTED = ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra'] as const;
  type Counted = (typeof COUNTED)[number];
  const PER = 10_000;

  function make1(a: Counted, limit: number, burst: number): RuleConfig {
    const o = { limit, per: PER, accounting: 'leaky' as const };
    return a === 'tokenBucket' || a === 'leakyBucket' || a === 'gcra' ? rules[a]({ ...o, burst }) : rules[a](o);
  }

  /** used — the cost the old rule's admitted history counts at `now` (the estimate for the sliding window). */
  function used(a: Counted, r: RuleConfig, admitted: { t: number; cost: number }[], now: number): number {
    const w = Math.floor(now / PER) * PER;
    switch (a) {
      case 'fixedWindow': return admitted.filter((x) => x.t >= w).reduce((s, x) => s + x.cost, 0);
      case 'slidingLog': return admitted.filter((x) => x.t > now - PER).reduce((s, x) => s + x.cost, 0);
      case 'slidingWindow': {
        const curr = admitted.filter((x) => x.t >= w).reduce((s, x) => s + x.cost, 0);
        const prev = admitted.filter((x) => x.t >= w - PER && x.t < w).reduce((s, x) => s + x.cost, 0);
        return prev * (1 - (now - w) / PER) + curr;
      }
      default: {
        let d = 0;
        let t = -Infinity;
        for (const x of admitted) {
          d = Math.max(0, d - (x.t - t) * (r.limit / r.per)) + x.cost;
          t = x.t;
        }
        return Math.max(0, d - (now - t) * (r.limit / r.per));
      }
    }
  }

  for (const a of COUNTED) {
    it(`${a}`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.record({ gap: fc.integer({ min: 0, max: 4_000 }), cost: fc.constantFrom(1, 1, 2, 3) }), { minLength: 1, maxLength: 40 }),
          fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 30 }),
          fc.integer({ min: 0, max: 3_000 }),
          (steps: Step[], l1, b1, l2, b2, after) => {
            const store = memoryStore();
            const r1 = make1(a, l1, b1);
            const r2 = make1(a, l2, b2);
            const old = limiter({ rules: [r1], store });
            let t = T0;
            const admitted: { t: number; cost: number }[] = [];
            for (const s of steps) {
              t += s.gap;
              if (old.checkSync('k', { now: t, cost: s.cost }).allowed) admitted.push({ t, cost: s.cost });
            }
            const change = t + after;
            const lim = limiter({ rules: [r2], store, clock: { now: () => change }, succeeds: old });
            const u = used(a, r1, admitted, change);
            const room = (a === 'tokenBucket' || a === 'leakyBucket' || a === 'gcra' ? r2.burst : r2.limit) - u;
            const most = Math.max(0, Math.floor(room + 1e-6));
            const got = lim.checkSync('k', { now: change, cost: 0 }).remaining;
            // never forgives: never more than the used amount allows
            assert.ok(got <= most, `${a}: ${got} remaining, the used amount ${u} allows ${most}`);
            // equal, up to a floor that lands on the other side of an integer by float error
            const nearInteger = Math.abs(room - Math.round(room)) < 1e-6;
            assert.ok(got === most || (nearInteger && got === most - 1), `${a}: ${got} remaining, expected ${most} (used ${u})`);
            const probe = lim.checkSync('k', { now: change, cost: 1 });
            if (!probe.allowed && (a === 'tokenBucket' || a === 'leakyBucket' || a === 'gcra')) {
              const expected = (u + 1 - r2.burst) / (r2.limit / r2.per);
              assert.ok(Math.abs(probe.retryAfter - expected) < 0.02, `${a}: retryAfter ${probe.retryAfter}, expected ${expected}`);
            }
          },
        ),
        { numRuns: 150 },
      );
    });
  }
});

describe('the cost of a conversion', () => {
  it('converts 100 000 clients of one gcra rule in one pass, well under the 50 ms a reload may hold a check', () => {
    const store = memoryStore({ maxKeys: 100_000 });
    const old = make(store, rule('gcra', 100));
    for (let i = 0; i < 100_000; i++) old.checkSync(`client:${i}`, { now: T0 + i });
    const start = performance.now();
    const lim = limiter({ rules: [rule('gcra', 2)], store, clock: { now: () => T0 + MINUTE }, succeeds: old });
    const ms = performance.now() - start;
    assert.equal((lim.bound as MemoryTable).size, 100_000);
    console.log(`# converted 100 000 gcra clients in ${ms.toFixed(1)} ms`);
    assert.ok(ms < 200, `${ms} ms`);
  });
});

describe('docs/limiter.md', () => {
  it('its example runs and prints what its comments say', () => {
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const doc = readFileSync(join(root, 'docs/limiter.md'), 'utf8');
    const code = /```js\n([\s\S]*?)\n```/.exec(doc)?.[1];
    assert.ok(code !== undefined, 'a js block');
    // inside the package, so that 'ratekeeper' resolves to it by its own name
    const dir = mkdtempSync(join(root, 'dist', '.doc-limiter-'));
    try {
      writeFileSync(join(dir, 'example.mjs'), code);
      const out = execFileSync(process.execPath, [join(dir, 'example.mjs')], { encoding: 'utf8', timeout: 20_000 });
      const expected = [...code.matchAll(/\/\/ (true true|false 25 false)/g)].map((m) => m[1]);
      assert.deepEqual(out.trim().split('\n'), expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
