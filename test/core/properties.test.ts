/**
 * Invariants, checked with fast-check over random histories of (gap, cost) with explicit times.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { limiter, rules, type RuleConfig, type Decision } from '../../src/index.js';

type Step = { gap: number; cost: number };
const step = (maxGap: number, costs: number[]) =>
  fc.record({ gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: maxGap })), cost: fc.constantFrom(...costs) });
const history = (maxGap: number, costs = [1, 1, 1, 2, 0.5], max = 60) => fc.array(step(maxGap, costs), { minLength: 1, maxLength: max });

const T0 = 1_700_000_000_000;

/** replay — runs steps through a fresh limiter; returns the decisions and their times. */
function replay(ruleList: RuleConfig[], steps: Step[], key = 'k') {
  const lim = limiter({ rules: ruleList });
  let t = T0;
  const out: { t: number; cost: number; d: Decision }[] = [];
  for (const s of steps) {
    t += s.gap;
    out.push({ t, cost: s.cost, d: lim.checkSync(key, { now: t, cost: s.cost }) });
  }
  return { lim, out, t };
}

const everyRule = (limit: number, per: number, accounting: 'leaky' | 'strict'): RuleConfig[] => [
  rules.fixedWindow({ limit, per, accounting }),
  rules.slidingWindow({ limit, per, accounting }),
  rules.slidingLog({ limit, per, accounting }),
  rules.tokenBucket({ limit, per, burst: Math.max(1, Math.ceil(limit / 2)), accounting }),
  rules.leakyBucket({ limit, per, accounting }),
  rules.gcra({ limit, per, burst: Math.max(1, Math.ceil(limit / 3)), accounting }),
  rules.earrrl({ limit, per, halfLife: per / 2, accounting }),
  rules.exponential({ limit, per, accounting }),
];

describe('properties', () => {
  it('slidingLog never admits more than limit in any window of per; fixedWindow never in an aligned window', () => {
    fc.assert(fc.property(history(400), fc.integer({ min: 1, max: 8 }), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), (steps, limit, accounting) => {
      const per = 1000;
      for (const rule of [rules.slidingLog({ limit, per, accounting }), rules.fixedWindow({ limit, per, accounting })]) {
        const admitted = replay([rule], steps).out.filter((x) => x.d.allowed && x.cost > 0);
        for (const a of admitted) {
          const inWindow = rule.algorithm === 'slidingLog'
            ? admitted.filter((b) => b.t > a.t - per && b.t <= a.t)
            : admitted.filter((b) => Math.floor(b.t / per) === Math.floor(a.t / per));
          const sum = inWindow.reduce((s, b) => s + b.cost, 0);
          assert.ok(sum <= limit + 1e-9, `${rule.algorithm}: ${sum} admitted in one window of limit ${limit}`);
        }
      }
    }), { numRuns: 150 });
  });

  it('tokenBucket and gcra never admit more than burst + elapsed·rate in any interval', () => {
    fc.assert(fc.property(history(300), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), (steps, limit, burst) => {
      const per = 1000;
      for (const rule of [rules.tokenBucket({ limit, per, burst }), rules.gcra({ limit, per, burst })]) {
        const admitted = replay([rule], steps).out.filter((x) => x.d.allowed);
        for (let i = 0; i < admitted.length; i++) {
          let sum = 0;
          for (let j = i; j < admitted.length; j++) {
            sum += admitted[j].cost;
            const bound = burst + ((admitted[j].t - admitted[i].t) * limit) / per;
            assert.ok(sum <= bound + 1e-6, `${rule.algorithm}: ${sum} > ${bound}`);
          }
        }
      }
    }), { numRuns: 150 });
  });

  it('tokenBucket and gcra of the same shape give the same decisions', () => {
    fc.assert(fc.property(history(500, [1, 2, 3, 0.25]), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 10 }), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), (steps, limit, burst, accounting) => {
      const a = replay([rules.tokenBucket({ limit, per: '1s', burst, accounting })], steps).out;
      const b = replay([rules.gcra({ limit, per: '1s', burst, accounting })], steps).out;
      a.forEach((x, i) => {
        assert.equal(x.d.allowed, b[i].d.allowed, `step ${i}`);
        assert.equal(x.d.remaining, b[i].d.remaining, `step ${i} remaining`);
        assert.ok(Math.abs(x.d.retryAfter - b[i].d.retryAfter) < 1e-2 || x.d.retryAfter === b[i].d.retryAfter, `step ${i} retryAfter (within the 10 µs of epoch-ms rounding)`);
      });
    }), { numRuns: 200 });
  });

  it('retryAfter is exact: the same request is refused 1 ms before it and admitted at it (every algorithm, both accountings)', () => {
    fc.assert(fc.property(history(700), fc.integer({ min: 1, max: 6 }), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), fc.integer({ min: 0, max: 7 }), (steps, limit, accounting, which) => {
      const rule = everyRule(limit, 1000, accounting)[which];
      const { out } = replay([rule], steps);
      const i = out.findIndex((x) => !x.d.allowed && x.cost > 0);
      if (i < 0) return;
      const denied = out[i];
      const upTo = steps.slice(0, i + 1);
      const retry = denied.d.retryAfter;
      if (retry === Infinity) return;
      assert.ok(retry > 0, 'a refusal waits');
      if (retry >= 1) {
        const early = replay([rule], upTo);
        assert.equal(early.lim.checkSync('k', { now: denied.t + retry - 1, cost: denied.cost }).allowed, false, `${rule.algorithm}: admitted 1 ms before retryAfter ${retry}`);
      }
      const onTime = replay([rule], upTo);
      assert.equal(onTime.lim.checkSync('k', { now: denied.t + retry, cost: denied.cost }).allowed, true, `${rule.algorithm}: refused at retryAfter ${retry}`);
    }), { numRuns: 400 });
  });

  it('a multi-rule retryAfter is exact too, with strict and leaky rules mixed', () => {
    fc.assert(fc.property(history(400), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), (steps, accounting) => {
      const policy = [rules.gcra({ limit: 2, per: '1s', accounting }), rules.slidingLog({ limit: 5, per: '5s' }), rules.exponential({ limit: 4, per: '2s', accounting: 'strict' })];
      const { out } = replay(policy, steps);
      const i = out.findIndex((x) => !x.d.allowed && x.cost > 0);
      if (i < 0 || out[i].d.retryAfter === Infinity) return;
      const { t, cost, d } = out[i];
      const upTo = steps.slice(0, i + 1);
      if (d.retryAfter >= 1) assert.equal(replay(policy, upTo).lim.checkSync('k', { now: t + d.retryAfter - 1, cost }).allowed, false);
      assert.equal(replay(policy, upTo).lim.checkSync('k', { now: t + d.retryAfter, cost }).allowed, true);
    }), { numRuns: 200 });
  });

  it('cost 0 never changes state (peeks anywhere between requests change no later decision)', () => {
    const peek = fc.record({ after: fc.integer({ min: 0, max: 59 }), frac: fc.double({ min: 0, max: 1, noNaN: true }) });
    fc.assert(fc.property(history(500), fc.array(peek, { maxLength: 20 }), fc.integer({ min: 0, max: 7 }), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), (steps, peeks, which, accounting) => {
      const rule = everyRule(3, 1000, accounting)[which];
      let t = T0;
      const times = steps.map((s) => (t += s.gap));
      const plain = limiter({ rules: [rule] });
      const peeked = limiter({ rules: [rule] });
      steps.forEach((s, i) => {
        const a = plain.checkSync('k', { now: times[i], cost: s.cost });
        const b = peeked.checkSync('k', { now: times[i], cost: s.cost });
        assert.deepEqual([b.allowed, b.remaining, b.retryAfter, b.resetAfter], [a.allowed, a.remaining, a.retryAfter, a.resetAfter], `${rule.algorithm} step ${i}`);
        const next = i + 1 < steps.length ? times[i + 1] : times[i] + 1000;
        for (const p of peeks) if (p.after === i) peeked.checkSync('k', { now: times[i] + p.frac * (next - times[i]), cost: 0 });
      });
    }), { numRuns: 200 });
  });

  it('all-or-nothing: under leaky accounting a refused request changes nothing, whichever rule refused it', () => {
    fc.assert(fc.property(history(300), (steps) => {
      const policy = [rules.tokenBucket({ limit: 3, per: '1s' }), rules.slidingLog({ limit: 5, per: '3s' }), rules.fixedWindow({ limit: 4, per: '2s' }), rules.exponential({ limit: 3, per: '1s', name: 'exp' })];
      const { out } = replay(policy, steps);
      // Dropping every refused request from the history leaves every decision of the admitted ones unchanged.
      const admittedOnly = steps.map((s, i) => ({ s, i })).filter(({ i }) => out[i].d.allowed);
      let t = T0;
      const lim = limiter({ rules: policy });
      let k = 0;
      for (let i = 0; i < steps.length; i++) {
        t += steps[i].gap;
        if (admittedOnly[k]?.i !== i) continue;
        k++;
        const d = lim.checkSync('k', { now: t, cost: steps[i].cost });
        assert.equal(d.allowed, true, `step ${i} was admitted with the refusals in the history, and must be without them`);
        assert.deepEqual(d.rules.map((r) => r.remaining), out[i].d.rules.map((r) => r.remaining), `step ${i}: the refusals consumed something`);
      }
    }), { numRuns: 200 });
  });

  it('a request stamped earlier than the latest is never treated better than one at the latest time', () => {
    fc.assert(fc.property(history(600), fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 0, max: 7 }), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), (steps, back, which, accounting) => {
      const rule = everyRule(4, 1000, accounting)[which];
      const atLatest = replay([rule], steps);
      const stepped = replay([rule], steps);
      const a = atLatest.lim.checkSync('k', { now: atLatest.t });
      const b = stepped.lim.checkSync('k', { now: stepped.t - back });
      assert.ok(!b.allowed || a.allowed, `${rule.algorithm}: admitted ${back} ms earlier but not at the latest time`);
      assert.ok(b.remaining <= a.remaining, `${rule.algorithm}: more remaining ${back} ms earlier`);
    }), { numRuns: 300 });
  });

  it('behind the stored time the clock is clamped: the same decision, and waits counted from the stored time', () => {
    // Under strict accounting every request stores its time, so the last request's time is the state's time.
    fc.assert(fc.property(history(600), fc.integer({ min: 1, max: 5000 }), fc.constantFrom(0, 3, 4, 6, 7), (steps, back, which) => {
      const rule = everyRule(4, 1000, 'strict')[which];
      const clamped = replay([rule], steps);
      const stepped = replay([rule], steps);
      const a = clamped.lim.checkSync('k', { now: clamped.t });
      const b = stepped.lim.checkSync('k', { now: stepped.t - back });
      assert.deepEqual([b.allowed, b.remaining], [a.allowed, a.remaining], rule.algorithm);
      const shifted = (x: number) => (x > 0 && Number.isFinite(x) ? x - back : x);
      assert.ok(Math.abs(shifted(b.retryAfter) - a.retryAfter) < 1e-6 || b.retryAfter === a.retryAfter, `${rule.algorithm}: retryAfter ${b.retryAfter} from ${back} ms earlier vs ${a.retryAfter}`);
      assert.ok(Math.abs(shifted(b.resetAfter) - a.resetAfter) < 1e-6 * Math.max(1, a.resetAfter), `${rule.algorithm}: resetAfter ${b.resetAfter} from ${back} ms earlier vs ${a.resetAfter}`);
      for (const later of [0, 1, 250, 5000]) {
        const x = clamped.lim.checkSync('k', { now: clamped.t + later });
        const y = stepped.lim.checkSync('k', { now: stepped.t + later });
        assert.deepEqual([y.allowed, y.remaining], [x.allowed, x.remaining], `${rule.algorithm}: the state differs afterwards`);
      }
    }), { numRuns: 300 });
  });

  it('remaining never exceeds the burst (or the limit), for every algorithm, at any rate', () => {
    // High rates make the comparisons' 10 µs time slack worth a whole request or more: it must not show in remaining.
    fc.assert(fc.property(history(3, [1, 1, 2, 0.5, 0], 80), fc.constantFrom(3, 100, 1e4, 1e6), fc.constantFrom(1, 10, 1000), fc.constantFrom<'leaky' | 'strict'>('leaky', 'strict'), fc.integer({ min: 0, max: 7 }), (steps, limit, per, accounting, which) => {
      const rule = everyRule(limit, per, accounting)[which];
      // earrrl's burst follows from limit, per and halfLife: 1 + (limit/per)/λ
      const most = rule.algorithm === 'earrrl' ? Math.floor(limit / per / (Math.LN2 / rule.halfLife) + 1 + 1e-6) : Math.floor(rule.burst + 1e-6);
      const lim = limiter({ rules: [rule] });
      let t = T0;
      assert.ok(lim.checkSync('fresh', { now: t, cost: 0 }).remaining <= most, `${rule.algorithm} fresh`);
      for (const s of steps) {
        t += s.gap / 8;
        const d = lim.checkSync('k', { now: t, cost: s.cost });
        assert.ok(d.remaining <= most, `${rule.algorithm} ${limit}/${per}ms: remaining ${d.remaining} > ${most}`);
      }
    }), { numRuns: 300 });
  });

  it('remaining of high-rate bucket rules is their burst, and what they admit at once', () => {
    for (const rule of [rules.gcra({ limit: 1e6, per: '1s' }), rules.gcra({ limit: 100, per: 1 }), rules.tokenBucket({ limit: 100, per: 1 }), rules.leakyBucket({ limit: 100, per: 1 })]) {
      const lim = limiter({ rules: [rule] });
      assert.equal(lim.checkSync('k', { now: T0, cost: 0 }).remaining, rule.burst, `${rule.algorithm} ${rule.name}`);
    }
  });

  it('the façade clamps a clock that steps back', () => {
    let now = 10_000;
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })], clock: { now: () => now } });
    assert.equal(lim.checkSync('k').allowed, true);
    now = 9_000; // an NTP step back into the previous window
    assert.equal(lim.checkSync('k').allowed, false, 'the earlier window must not open again');
    now = 11_000;
    assert.equal(lim.checkSync('k').allowed, true);
  });
});


describe('a wall clock that steps, under a monotonic source', () => {
  const DAY = 86_400_000;
  /** clock — a wall clock and a monotonic source the test moves by hand. */
  const steppy = () => {
    const c = { wall: T0, mono: 5_000, now: () => c.wall, monotonic: () => c.mono };
    return c;
  };

  it('a +1 day step, then its correction, neither frees a limited client nor freezes it', () => {
    const c = steppy();
    const lim = limiter({ rules: [rules.tokenBucket({ limit: 1, per: '10s' })], clock: c });
    assert.equal(lim.checkSync('k').allowed, true);
    const refused = lim.checkSync('k');
    assert.deepEqual([refused.allowed, refused.retryAfter], [false, 10_000]);
    c.wall += DAY; // NTP steps a day forward
    c.mono += 1;
    const during = lim.checkSync('k');
    assert.deepEqual([during.allowed, during.retryAfter], [false, 9_999], 'a wall step is not a refill');
    c.wall -= DAY; // … and is corrected
    c.mono += 9_999;
    assert.equal(lim.checkSync('k').allowed, true, 'admitted once the real 10 s have passed, not a day later');
  });

  it('a step back neither refuses longer nor admits earlier', () => {
    const c = steppy();
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })], clock: c });
    assert.equal(lim.checkSync('k').allowed, true);
    c.wall -= 3_600_000;
    c.mono += 10;
    assert.equal(lim.checkSync('k').allowed, false, 'the same window: still refused');
    c.mono += 1_000;
    assert.equal(lim.checkSync('k').allowed, true, 'the next window opens after a real second, not an hour later');
  });

  it('the denial cache follows the monotonic time too', async () => {
    const c = steppy();
    const lim = limiter({ rules: [rules.gcra({ limit: 1, per: '1s' })], clock: c, denialCache: true });
    assert.equal((await lim.check('k')).allowed, true);
    assert.equal((await lim.check('k')).allowed, false);
    assert.equal(lim.denialCache?.size, 1);
    c.wall -= 3_600_000;
    c.mono += 1_000;
    assert.equal((await lim.check('k')).allowed, true, 'the cached refusal ended after its real retryAfter');
  });

  it('a monotonic source that steps back is clamped all the same', () => {
    const c = steppy();
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })], clock: c });
    assert.equal(lim.checkSync('k').allowed, true);
    c.mono -= 5_000;
    assert.equal(lim.checkSync('k').allowed, false);
  });

  it('the default clock starts at wall time', () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1d' })] });
    const d = lim.checkSync('k');
    const end = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 86_400_000;
    assert.ok(Math.abs(Date.now() + d.resetAfter - end) < 1_000, 'the window is the wall clock\'s day');
    assert.throws(() => limiter({ rules: '1/s', clock: { now: Date.now, monotonic: 5 as never } }), /clock\.monotonic must be a function returning ms, got 5/);
  });
});
