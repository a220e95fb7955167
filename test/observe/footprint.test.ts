/**
 * test/observe/footprint — what a limiter holds before and as it sees traffic (issue 15 §4: a service with 10 000
 * limits, most of them idle, must not pay each one's full observation capacity): an observer and a memory table that
 * have seen nothing hold (almost) nothing, and they grow with what they see; the growing series ring reads exactly
 * as a plain count per bucket over a long, gappy stream.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionSeries } from '../../src/observe/series.js';
import { HeavyHitters } from '../../src/observe/heavyHitters.js';
import { Observer } from '../../src/observe/observer.js';
import { limiter, rules, memoryStore } from '../../src/index.js';

describe('footprint of an idle limiter', () => {
  it('an observer that has seen nothing holds under 1 kB of counters; one client, under 8 kB', () => {
    const o = new Observer(['a', 'b']);
    assert.ok(o.bytes < 1024, `idle observer: ${o.bytes} bytes`);
    const lim = limiter({ rules: '10/s', observe: true });
    lim.checkSync('k', { now: 1000 });
    const b = lim.observer!.bytes;
    assert.ok(b < 8 * 1024, `after one decision: ${b} bytes`);
  });

  it('the heavy-hitters counters grow with the clients seen, up to 2 × capacity, and still find the heavy ones', () => {
    const h = new HeavyHitters({ capacity: 100, halfLife: Infinity });
    assert.equal(h.bytes, 0);
    for (let i = 0; i < 10; i++) h.add(`k${i}`, 1, 1000, false, Number.NaN);
    assert.ok(h.bytes <= 16 * 64, `10 clients: ${h.bytes} bytes`);
    for (let i = 0; i < 5000; i++) {
      h.add(`k${i}`, 1, 1000 + i, false, Number.NaN);
      if (i % 5 === 0) h.add('heavy', 10, 1000 + i, false, Number.NaN);
    }
    assert.ok(h.size <= 200);
    assert.ok(h.bytes <= 200 * 64 + 200 * 8, `full: ${h.bytes} bytes`);
    assert.equal(h.top(1, 6000)[0].key, 'heavy');
    assert.equal(h.top(1, 6000)[0].requests, 10_000);
  });

  it('the series ring grows as time passes and reads exactly as a count per bucket (gaps, wrap, a time out of order)', () => {
    const step = 1000;
    const span = 300_000; // 300 buckets: growth 64 → 128 → 256 → 300, then wrap
    const s = new DecisionSeries(2, step, span);
    assert.equal(s.bytes, 2 * 8);
    const truth = new Map<number, [number, number]>();
    let t = 5_000_000;
    const bump = (at: number, c: number): void => {
      s.add(at, c);
      const b = Math.floor(at / step);
      const row = truth.get(b) ?? [0, 0];
      row[c]++;
      truth.set(b, row);
    };
    let x = 7;
    for (let i = 0; i < 3000; i++) {
      x = (x * 1103515245 + 12345) % 2147483648;
      t += x % 997; // 0 to ~1 s apart, with repeats in a bucket
      if (i % 500 === 250) t += 40_000; // a gap
      bump(t, x % 2);
      if (i % 97 === 0) bump(t - 2000, 1); // out of order, within the span
      if (i === 200) assert.ok(s.bytes <= 128 * 2 * 4 + 16, `after ~100 s: ${s.bytes} bytes`);
      if (i % 250 === 0 || i === 2999) {
        const [a, b] = s.read(t, -Infinity);
        const first = a.start / step;
        for (let k = 0; k < a.values.length; k++) {
          const want = truth.get(first + k) ?? [0, 0];
          assert.deepEqual([a.values[k], b.values[k]], want, `bucket ${first + k} at step ${i}`);
        }
        assert.equal(first, Math.max(Math.floor(5_000_000 / step), Math.floor(t / step) - 299));
      }
    }
    assert.equal(s.bytes, 300 * 2 * 4 + 16);
  });

  it('a memory-store table holds no client slots before its first client, then grows with them', () => {
    const store = memoryStore();
    const lims = Array.from({ length: 100 }, () => limiter({ rules: '10/s', store }));
    const before = process.memoryUsage().arrayBuffers;
    const more = Array.from({ length: 2000 }, () => limiter({ rules: '10/s; 100/min', store }));
    const per = (process.memoryUsage().arrayBuffers - before) / more.length;
    // was a slab of 1024 slots per table up front (1024 × 4 × 8 + LRU arrays: ~41 kB)
    assert.ok(per < 2048, `array buffers per idle limiter: ${per.toFixed(0)} bytes`);
    for (let i = 0; i < 100; i++) assert.equal(lims[0].checkSync(`c${i % 4}`, { now: 1000 }).allowed, i < 40, `request ${i}`);
    assert.equal(more[0].checkSync('c', { now: 1000 }).remaining, 9);
  });
});
