/**
 * test/observe/heavyHitters — the summary's guarantees as properties (fast-check): every client with more than
 * 1/capacity of the traffic is listed, counts are never over the truth nor under it by more than the error, the
 * error is at most total/capacity, and over decayed weights the same holds; memory stays fixed under millions of
 * distinct keys.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { HeavyHitters } from '../../src/observe/heavyHitters.js';

/** stream — requests (key index, cost) from a skewed alphabet: a few heavy keys and many light ones. */
const stream = fc.array(
  fc.tuple(fc.oneof({ weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 2, arbitrary: fc.integer({ min: 4, max: 400 }) }), fc.integer({ min: 1, max: 3 })),
  { minLength: 1, maxLength: 2000 },
);

describe('heavy hitters (Frequent with batched decrements, forward decay)', () => {
  it('a table: when the 2·capacity counters are taken, the capacity-th largest count is subtracted and the empty ones freed', () => {
    const h = new HeavyHitters({ capacity: 2, halfLife: Infinity });
    for (const [key, cost] of [['a', 3], ['b', 1], ['c', 1], ['d', 2]] as const) h.add(key, cost, 0, key === 'b', Number.NaN);
    const now = 1000; // undecayed: rates are counts per second since t = 0
    assert.deepEqual(h.top(5, now).map((e) => [e.key, e.rate, e.error]), [['a', 3, 0], ['d', 2, 0], ['b', 1, 0], ['c', 1, 0]]);
    h.add('e', 1, 0, false, Number.NaN); // full: m = 2 (2nd largest); a 1, d/b/c freed; e enters
    assert.deepEqual(h.top(5, now).map((e) => [e.key, e.rate, e.error, e.requests]), [['a', 1, 2, 3], ['e', 1, 2, 1]]);
    assert.equal(h.get('b', now), undefined);
    assert.equal(h.minRate(now), 2);
    assert.equal(h.size, 2);
  });

  it('undecayed: every key with more than total/capacity is listed; est <= true <= est + error, error <= total/capacity', () => {
    fc.assert(fc.property(stream, fc.integer({ min: 1, max: 50 }), (reqs, capacity) => {
      const h = new HeavyHitters({ capacity, halfLife: Infinity });
      const truth = new Map<string, number>();
      let total = 0;
      reqs.forEach(([k, cost], i) => {
        const key = `k${k}`;
        h.add(key, cost, i === 0 ? 0 : 1, false, Number.NaN); // times 0 then 1: the rate is count per second over 1 s
        truth.set(key, (truth.get(key) ?? 0) + cost);
        total += cost;
      });
      const now = 1000;
      const listed = new Map(h.top(2 * capacity, now).map((e) => [e.key, e]));
      assert.ok(h.size <= 2 * capacity);
      for (const [key, count] of truth) {
        const e = listed.get(key);
        if (count > total / capacity) assert.ok(e !== undefined, `${key} has ${count} of ${total} > 1/${capacity} and is listed`);
        if (e !== undefined) {
          assert.ok(e.rate <= count + 1e-9, `${key}: estimate ${e.rate} <= true ${count}`);
          assert.ok(e.rate + e.error >= count - 1e-9, `${key}: estimate + error ${e.rate + e.error} >= true ${count}`);
        }
      }
      assert.ok(h.minRate(now) <= total / capacity + 1e-9, 'error <= total / capacity');
    }), { numRuns: 300 });
  });

  it('decayed: every key with more than 1/capacity of the decayed traffic is listed, its rate at most total/capacity under', () => {
    const halfLife = 1000;
    const lambda = Math.LN2 / halfLife;
    fc.assert(fc.property(stream, fc.integer({ min: 1, max: 30 }), fc.integer({ min: 0, max: 50 }), (reqs, capacity, gap) => {
      const h = new HeavyHitters({ capacity, halfLife });
      const truth = new Map<string, number>(); // decayed count at `now`
      const times: number[] = [];
      let t = 1_700_000_000_000;
      for (let i = 0; i < reqs.length; i++) {
        t += (i * 7919) % (gap + 1); // deterministic, uneven gaps
        times.push(t);
      }
      const now = t;
      let total = 0;
      reqs.forEach(([k, cost], i) => {
        const w = cost * Math.exp(-lambda * (now - times[i]));
        h.add(`k${k}`, cost, times[i], false, Number.NaN);
        truth.set(`k${k}`, (truth.get(`k${k}`) ?? 0) + w);
        total += w;
      });
      const toRate = (c: number): number => c * lambda * 1000;
      const listed = new Map(h.top(2 * capacity, now).map((e) => [e.key, e]));
      assert.ok(Math.abs(h.totalRate(now) - toRate(total)) <= 1e-6 * toRate(total) + 1e-12);
      for (const [key, c] of truth) {
        const e = listed.get(key);
        if (c > (total / capacity) * (1 + 1e-9)) assert.ok(e !== undefined, `${key}: ${c} of ${total} is listed`);
        const tol = 1e-9 * toRate(total) + 1e-12;
        if (e !== undefined) {
          assert.ok(e.rate <= toRate(c) + tol, `${key}: rate ${e.rate} <= true ${toRate(c)}`);
          assert.ok(e.rate + e.error >= toRate(c) - tol);
          assert.ok(e.error <= toRate(total) / capacity + tol);
        } else {
          assert.ok(toRate(c) <= h.minRate(now) + tol, `${key}: an unlisted client is under the error`);
        }
      }
    }), { numRuns: 300 });
  });

  it('the rate is EARRRL\'s estimate: a client at a steady 10/s reads ~10/s after many half-lives, half after one half-life of silence', () => {
    const h = new HeavyHitters({ capacity: 4, halfLife: 1000 });
    for (let t = 0; t <= 20_000; t += 100) h.add('steady', 1, t, false, Number.NaN);
    const at = h.get('steady', 20_000)!.rate;
    assert.ok(Math.abs(at - 10) < 0.5, `~10/s, got ${at}`);
    assert.ok(Math.abs(h.get('steady', 21_000)!.rate - at / 2) < 1e-9);
  });

  it('the weights are rescaled (no overflow) over days of traffic, and the ordering holds', () => {
    const h = new HeavyHitters({ capacity: 3, halfLife: 1000 });
    for (let t = 0; t < 3 * 86_400_000; t += 997) {
      h.add('heavy', 2, t, false, Number.NaN);
      h.add(`light${t % 7}`, 1, t, false, Number.NaN);
    }
    const now = 3 * 86_400_000;
    const top = h.top(3, now);
    assert.equal(top[0].key, 'heavy');
    for (const e of top) assert.ok(Number.isFinite(e.rate) && Number.isFinite(e.error));
  });

  it('memory stays fixed under two million distinct keys; a client with 1/50 of the traffic stays listed', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const h = new HeavyHitters({ capacity: 100, halfLife: Infinity });
    const heap = (): number => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    for (let i = 0; i < 10_000; i++) h.add(`warm:${i}`, 1, 0, false, Number.NaN);
    const before = heap();
    for (let i = 0; i < 2_000_000; i++) {
      h.add(i % 50 === 0 ? 'abuser' : `client:${i}`, 1, 1 + i / 1000, i % 50 === 0, Number.NaN);
    }
    const after = heap();
    assert.ok(h.size <= 200);
    assert.ok(h.top(100, 3000).some((e) => e.key === 'abuser'), 'the abuser (1/50 > 1/100) is listed');
    assert.equal(h.top(1, 3000)[0].key, 'abuser');
    assert.ok(after - before < 2_000_000, `heap grew by ${after - before} bytes over 2M distinct keys`);
  });
});
