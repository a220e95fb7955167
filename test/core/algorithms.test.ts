/**
 * Tables of (time, cost) → decision for every algorithm, with the worked examples of the seed documents.
 * Expected values are worked out by hand from each algorithm's definition (docs/algorithms.md), not read off the code.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules } from '../../src/index.js';
import { runTable, close } from '../support/table.js';

describe('fixedWindow', () => {
  it('counts per epoch-aligned window and forgives at the boundary', () => {
    runTable([rules.fixedWindow({ limit: 3, per: '1s' })], [
      { t: 10_000, allowed: true, remaining: 2, resetAfter: 1000 },
      { t: 10_500, allowed: true, remaining: 1, resetAfter: 500 },
      { t: 10_999, allowed: true, remaining: 0, resetAfter: 1 },
      { t: 10_999, allowed: false, remaining: 0, retryAfter: 1 },
      { t: 11_000, allowed: true, remaining: 2, resetAfter: 1000 },
      { t: 11_001, cost: 4, allowed: false, retryAfter: Infinity },
      { t: 11_001, cost: 2, allowed: true, remaining: 0 },
    ]);
  });

  it('a limit of a billion admits a billion, not one more (the tolerance is capped below a cost unit)', () => {
    // (a bucket refilling at a billion an hour would, by design, admit what 10 µs of refill brings: 2.8 requests;
    // this one refills slowly, so only the count tolerance is in play)
    for (const rule of [rules.fixedWindow({ limit: 1e9, per: '1h' }), rules.slidingLog({ limit: 1e9, per: '1h' }), rules.tokenBucket({ limit: 1e9, per: '1000d' }), rules.slidingWindow({ limit: 1e9, per: '1h' })]) {
      runTable([rule], [
        { t: 0, cost: 1e9 - 1, allowed: true, remaining: 1 },
        { t: 0, allowed: true, remaining: 0 },
        { t: 0, allowed: false, remaining: 0 },
      ]);
    }
  });

  it('lets 2×limit through across a window boundary (the survey\'s flaw, reproduced)', () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 20, per: '1m' })] });
    let admitted = 0;
    for (let i = 0; i < 30; i++) if (lim.checkSync('k', { now: 59_900 + i }).allowed) admitted++;
    for (let i = 0; i < 30; i++) if (lim.checkSync('k', { now: 60_000 + i }).allowed) admitted++;
    assert.equal(admitted, 40, '20 in the last 100 ms of one window and 20 in the first of the next');
  });

  it('strict accounting counts refused attempts, but the next window still forgives', () => {
    runTable([rules.fixedWindow({ limit: 2, per: '1s', accounting: 'strict' })], [
      { t: 0, allowed: true, remaining: 1 },
      { t: 1, allowed: true, remaining: 0 },
      { t: 2, allowed: false, remaining: 0, retryAfter: 998 },
      { t: 3, allowed: false, remaining: 0, retryAfter: 997 },
      { t: 1000, allowed: true, remaining: 1 },
    ]);
  });
});

describe('slidingWindow', () => {
  it('weights the previous window by its overlap; retryAfter is where the estimate meets the limit', () => {
    const rows = [];
    for (let i = 0; i < 10; i++) rows.push({ t: 500, allowed: true, remaining: 9 - i });
    runTable([rules.slidingWindow({ limit: 10, per: '1s' })], [
      ...rows,
      // curr = 10 in [0, 1000): in the next window the estimate is 10·(1 − x/1000), + 1 <= 10 at x = 100.
      { t: 500, allowed: false, remaining: 0, retryAfter: 600, resetAfter: 1500 },
      { t: 1099, allowed: false, retryAfter: 1 },
      { t: 1100, allowed: true, remaining: 0 },
      { t: 1200, allowed: true, remaining: 0, resetAfter: 1800 },
      { t: 1300, allowed: true, remaining: 0 },
      // curr = 3 now, prev = 10 weighted 0.7 → 10: the next one needs the weight down to 0.6, at t = 1400.
      { t: 1301, allowed: false, retryAfter: 99 },
      { t: 3000, allowed: true, remaining: 9 },
    ]);
  });
});

describe('slidingLog', () => {
  // The DomainTools example: rules 1/s and 5/min, five requests logged at 12:33:35, 12:33:37, 12:34:14, 12:34:26, 12:34:28.
  const at = (hms: string) => {
    const [h, m, s] = hms.split(':').map(Number);
    return ((h * 60 + m) * 60 + s) * 1000;
  };
  const policy = () => [rules.slidingLog({ limit: 1, per: '1s' }), rules.slidingLog({ limit: 5, per: '1m' })];

  it('reproduces the 12:34:31 refusal (wait 4 s) and the 12:34:40 admission', () => {
    const lim = limiter({ rules: policy() });
    for (const t of ['12:33:35', '12:33:37', '12:34:14', '12:34:26', '12:34:28']) {
      assert.equal(lim.checkSync('client', { now: at(t) }).allowed, true, t);
    }
    const d = lim.checkSync('client', { now: at('12:34:31') });
    assert.equal(d.allowed, false);
    assert.equal(d.retryAfter, 4000, 'the 5th timestamp (12:33:35) leaves the minute at 12:34:35');
    assert.deepEqual(d.rules.map((r) => r.allowed), [true, false], '1/s passes, 5/min fails');
    assert.equal(d.limit, 5, 'the binding rule is 5/min');
    const e = lim.checkSync('client', { now: at('12:34:40') });
    assert.equal(e.allowed, true);
    assert.equal(e.rules[1].remaining, 1, 'the last minute (12:33:40, 12:34:40] holds 12:34:14, :26, :28 and :40');
    const f = lim.checkSync('client', { now: at('12:34:40') + 500 });
    assert.equal(f.allowed, false);
    assert.equal(f.retryAfter, 500, 'refused by 1/s until 12:34:41');
    assert.equal(f.limit, 1);
  });

  it('under strict accounting a look (cost 0) still sees a window over its limit after the log is trimmed', () => {
    const lim = limiter({ rules: [rules.slidingLog({ limit: 2, per: '1s', accounting: 'strict' })] });
    for (const t of [0, 1, 2]) lim.checkSync('k', { now: t });
    const peek = lim.checkSync('k', { now: 500, cost: 0 });
    assert.deepEqual([peek.allowed, peek.retryAfter], [false, 500], 'three attempts in the window: over the limit of 2 until t = 1000 − 500');
  });

  it('is exact: never more than limit in any window, with costs', () => {
    runTable([rules.slidingLog({ limit: 5, per: '1s' })], [
      { t: 0, cost: 2, allowed: true, remaining: 3, resetAfter: 1000 },
      { t: 400, cost: 3, allowed: true, remaining: 0, resetAfter: 1000 },
      { t: 999, allowed: false, retryAfter: 1 },
      { t: 1000, cost: 3, allowed: false, retryAfter: 400 },
      { t: 1000, cost: 2, allowed: true, remaining: 0 },
      { t: 1000, cost: 6, allowed: false, retryAfter: Infinity },
    ]);
  });
});

describe('tokenBucket', () => {
  it('refills continuously at limit/per up to burst, starting full', () => {
    runTable([rules.tokenBucket({ limit: 10, per: '1s', burst: 5 })], [
      { t: 0, allowed: true, remaining: 4 },
      { t: 0, allowed: true, remaining: 3 },
      { t: 0, allowed: true, remaining: 2 },
      { t: 0, allowed: true, remaining: 1 },
      { t: 0, allowed: true, remaining: 0, resetAfter: 500 },
      { t: 0, allowed: false, remaining: 0, retryAfter: 100 },
      { t: 100, allowed: true, remaining: 0 },
      { t: 150, allowed: false, retryAfter: 50 },
      { t: 1000, allowed: true, remaining: 4, resetAfter: 100 },
      { t: 1000, cost: 6, allowed: false, retryAfter: Infinity },
    ]);
  });

  it('strict accounting lets the debt pass the burst: a hammering client waits for every attempt', () => {
    runTable([rules.tokenBucket({ limit: 10, per: '1s', burst: 2, accounting: 'strict' })], [
      { t: 0, allowed: true },
      { t: 0, allowed: true },
      { t: 0, allowed: false, retryAfter: 200 }, // debt 3: back to 1 at t = 200
      { t: 0, allowed: false, retryAfter: 300 },
      { t: 299, allowed: false, retryAfter: 101 }, // debt 4 − 2.99 = 1.01, charged → 2.01: back to 1 at t = 400
      { t: 400, allowed: true, remaining: 0 },
    ]);
  });
});

describe('leakyBucket', () => {
  it('admits as the token bucket does and reports the delay that smooths the output', () => {
    runTable([rules.leakyBucket({ limit: 10, per: '1s', burst: 5 })], [
      { t: 0, allowed: true, delay: 0 },
      { t: 0, allowed: true, delay: 100 },
      { t: 0, allowed: true, delay: 200 },
      { t: 0, allowed: true, delay: 300 },
      { t: 0, allowed: true, delay: 400, remaining: 0 },
      { t: 0, allowed: false, retryAfter: 100, delay: 0 },
      { t: 250, allowed: true, delay: 250 }, // level 5 − 2.5 = 2.5 ahead of it
    ]);
  });
});

describe('gcra', () => {
  it('answers as redis-cell: CL.THROTTLE user123 15 30 60 → [0, 16, 15, -1, 2]', () => {
    const rows = [{ t: 0, allowed: true, remaining: 15, resetAfter: 2000 }];
    for (let i = 1; i < 16; i++) rows.push({ t: 0, allowed: true, remaining: 15 - i, resetAfter: 2000 * (i + 1) });
    runTable([rules.gcra({ limit: 30, per: '60s', burst: 16 })], [
      ...rows,
      { t: 0, allowed: false, remaining: 0, retryAfter: 2000, resetAfter: 32_000 } as never,
      { t: 1999, allowed: false, retryAfter: 1 } as never,
      { t: 2000, allowed: true, remaining: 0, resetAfter: 32_000 } as never,
      { t: 0, cost: 17, allowed: false, retryAfter: Infinity } as never,
    ]);
  });
});

describe('earrrl', () => {
  // The seed's Redis transcript: limit 0.5/s, half-life 10 s, one request a second (strict: every attempt counts).
  const lambda = Math.LN2 / 10; // per second
  const q = Math.exp(-lambda);
  const estimate = (k: number) => (lambda * q * (1 - q ** k)) / (1 - q); // before request k, requests at 0 … k−1
  const transcript = [0, 0.064625593423117, 0.12483578218756, 0.18093794941434, 0.2332841604735, 0.28208311764286,
    0.32757287863479, 0.36998350934232, 0.40940326068647, 0.44628146174133, 0.48060100760135, 0.51262461170605];

  it('estimates as the closed form, is first limited at request #11, and matches the transcript within its timing jitter', () => {
    const lim = limiter({ rules: [rules.earrrl({ limit: 0.5, per: '1s', halfLife: '10s' })] });
    for (let k = 0; k <= 70; k++) {
      const d = lim.checkSync('user_id_123', { now: 1_000_000 + k * 1000 });
      close(d.rate, estimate(k), `estimate before #${k}`);
      assert.equal(d.allowed, k <= 10, `#${k} limited iff the estimate is over 0.5/s`);
      if (k < transcript.length) assert.ok(Math.abs(d.rate! - transcript[k]) <= 0.01 * transcript[k] + 1e-12, `#${k} vs transcript`);
    }
    // 10 s (one half-life) after #70 the estimate is half of what it was right after #70.
    const after = lim.checkSync('user_id_123', { now: 1_000_000 + 80_000 });
    close(after.rate, (estimate(70) + lambda) / 2, 'halved after one half-life');
    assert.ok(Math.abs(after.rate! - 0.50703163627721) < 0.02, 'the transcript says 0.507');
  });

  it('retryAfter is when the estimate falls to the limit; leaky accounting does not count refusals', () => {
    const lam = Math.LN2 / 1000; // per ms, half-life 1 s
    const lim = limiter({ rules: [rules.earrrl({ limit: 2, per: '1s', halfLife: '1s', accounting: 'leaky' })] });
    // threshold 0.002/ms; the j-th request of a burst at t = 0 sees N = j − 1 and passes while N·λ <= 0.002: 3 pass.
    const ds = [0, 0, 0, 0, 0].map(() => lim.checkSync('k', { now: 0 }));
    assert.deepEqual(ds.map((d) => d.allowed), [true, true, true, false, false]);
    close(ds[3].retryAfter, Math.log((3 * lam) / 0.002) / lam, 'ln(N·λ/threshold)/λ');
    close(ds[4].retryAfter, ds[3].retryAfter, 'a refusal under leaky accounting leaves N at 3');
    const retry = ds[4].retryAfter;
    assert.equal(lim.checkSync('k', { now: retry - 1 }).allowed, false);
    assert.equal(lim.checkSync('k', { now: retry }).allowed, true);
  });

  it('remaining counts the burst a fresh client has: 1 + (limit/per)/λ', () => {
    const d = limiter({ rules: [rules.earrrl({ limit: 30, per: '1m', halfLife: '10s' })] }).checkSync('k', { now: 0 });
    // threshold/λ = (0.5/s)/(ln2/10 s) = 7.21: the burst is 8 requests, 7 after this one.
    assert.equal(d.remaining, 7);
  });
});

describe('exponential', () => {
  /** root — the gap i (periods) where (1 − e^−i)·c/i + e^−i·r = limit, by bisection: an independent check of the Newton solve. */
  function root(r: number, c: number, limit: number): number {
    let lo = 1e-12;
    let hi = 100;
    for (let k = 0; k < 200; k++) {
      const mid = (lo + hi) / 2;
      const f = ((1 - Math.exp(-mid)) * c) / mid + Math.exp(-mid) * r;
      if (f > limit) lo = mid;
      else hi = mid;
    }
    return hi;
  }

  it('counts a fast burst at about its cost each, and a rare request in full', () => {
    const lim = limiter({ rules: [rules.exponential({ limit: 10, per: '1s' })] });
    const ds = Array.from({ length: 11 }, () => lim.checkSync('k', { now: 5_000_000 }));
    assert.deepEqual(ds.map((d) => d.allowed), [...Array(10).fill(true), false]);
    ds.forEach((d, i) => assert.ok(Math.abs(d.rate! - (i + 1)) < 1e-6, `rate after ${i + 1} fast requests ≈ ${i + 1}/s`));
    // an hour later the average has decayed to nothing, and max(r, cost) counts the request in full
    const later = limiter({ rules: [rules.exponential({ limit: 10, per: '1s' })] });
    later.checkSync('k', { now: 0 });
    close(later.checkSync('k', { now: 3_600_000, cost: 3 }).rate, 3, 'rare request counted at its cost');
  });

  it('remaining counts what would be admitted: after a gap the next request counts in full, not on top', () => {
    for (const limit of [1, 5]) {
      const lim = limiter({ rules: [rules.exponential({ limit, per: '1s' })] });
      lim.checkSync('k', { now: 0 });
      const peek = lim.checkSync('k', { now: 3000, cost: 0 });
      assert.equal(peek.remaining, limit, `limit ${limit}: r has decayed to ${Math.exp(-3).toFixed(3)}, so the next request's average is 1`);
      let admitted = 0;
      while (lim.checkSync('k', { now: 3000 }).allowed) admitted++;
      assert.equal(admitted, peek.remaining);
    }
  });

  it('retryAfter solves for the retried request\'s own cost (later than Finch\'s ln(r/limit))', () => {
    const lim = limiter({ rules: [rules.exponential({ limit: 10, per: '1s' })] });
    let last;
    for (let i = 0; i < 10; i++) last = lim.checkSync('k', { now: 0 });
    const r = last!.rate!; // the stored average, per second = per period
    const d = lim.checkSync('k', { now: 0 });
    assert.equal(d.allowed, false);
    const i = root(r, 1, 10);
    close(d.retryAfter, i * 1000, 'exact root');
    assert.ok(d.retryAfter > 1000 * Math.log(r / 10), 'later than the wait that ignores the cost');
    assert.equal(lim.checkSync('k', { now: Math.floor(d.retryAfter) - 1 }).allowed, false);
    assert.equal(lim.checkSync('k', { now: d.retryAfter }).allowed, true);
  });
});
