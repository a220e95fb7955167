/** test/observe/series — the decision counters per bucket over the last hour: a table of (t, column) → buckets. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DecisionSeries } from '../../src/observe/series.js';
import { Observer } from '../../src/observe/observer.js';
import { limiter, rules } from '../../src/index.js';

describe('decision series', () => {
  it('counts per bucket, clears buckets passed, keeps the span, ignores times older than it (totals still count)', () => {
    const s = new DecisionSeries(2, 1000, 5000);
    const rows: [number, number][] = [[0, 0], [10, 0], [999, 1], [1000, 1], [3500, 0]];
    for (const [t, c] of rows) s.add(t, c);
    assert.deepEqual(s.read(3999).map((x) => x.values), [[2, 0, 0, 1], [1, 1, 0, 0]]);
    s.add(7000, 1); // buckets 4..7: 0..2 fall out of the 5 kept
    const [a, b] = s.read(7000);
    assert.equal(a.start, 3000);
    assert.deepEqual(a.values, [1, 0, 0, 0, 0]);
    assert.deepEqual(b.values, [0, 0, 0, 0, 1]);
    s.add(100, 0); // older than the span: totals only
    assert.deepEqual([...s.totals], [4, 3]);
    assert.deepEqual(s.read(7000)[0].values, [1, 0, 0, 0, 0]);
    assert.deepEqual(s.read(9000, 8000)[0], { start: 8000, step: 1000, values: [0, 0] });
    assert.throws(() => new DecisionSeries(1, 500), /observe\.resolution must be from 1000 to 10000 ms, got 500/);
  });

  it('an observer counts outcomes and the rules that refused; looks (cost 0) are not traffic', () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 2, per: '1m', name: 'a' }), rules.fixedWindow({ limit: 3, per: '1m', name: 'b' })], observe: { resolution: 1000 } });
    for (const t of [0, 100, 200, 300]) lim.checkSync('k', { now: t });
    lim.checkSync('k', { now: 1500, cost: 0 });
    lim.checkSync('k', { now: 1500, cost: 5 }); // both refuse
    const st = lim.stats({ now: 1999, from: 0 });
    assert.deepEqual(st.outcomes, { allowed: 2, limited: 3, blocked: 0, exempt: 0, 'dry-run': 0, 'store-unavailable': 0 });
    assert.deepEqual(st.rules, { a: 3, b: 1 });
    assert.deepEqual(st.series.allowed.values, [2, 0]);
    assert.deepEqual(st.series.limited.values, [2, 1]);
    assert.deepEqual(st.series['refused:b'].values, [0, 1]);
    assert.throws(() => new Observer(['x'], { share: 5 }), /observe\.share must be a number of ms >= 100 or false, got 5/);
    assert.throws(() => limiter({ rules: '1/s' }).stats(), /stats\(\) needs a limiter made with \{ observe: true \}/);
  });

  it('sampling: past `samples` per second the summary is fed a weighted random sample; the top and its rates hold', () => {
    const obs = new Observer(['r'], { samples: 1000, halfLife: 1000 });
    const allowed = { allowed: true, reason: 'allowed', limit: 1, remaining: 1, retryAfter: 0, resetAfter: 0, rules: [] } as any;
    let t = 1_000_000;
    let fed = 0;
    const add = obs.hitters.add.bind(obs.hitters);
    obs.hitters.add = (...a) => {
      fed++;
      add(...a);
    };
    for (let ms = 0; ms < 5000; ms++, t++) {
      for (let i = 0; i < 10; i++) obs.record(i < 3 ? 'abuser' : `c${ms}:${i}`, 1, allowed, t); // 10 000/s, the abuser 3 000/s
    }
    assert.ok(fed < 7000, `fed ${fed} of 50 000 requests (about 1000/s)`);
    assert.ok(obs.keep > 0.08 && obs.keep < 0.12, `keep ${obs.keep}`);
    const [top] = obs.top(1, t);
    assert.equal(top.key, 'abuser');
    assert.ok(Math.abs(top.rate - 3000) < 450, `rate ${top.rate} ≈ 3000/s`);
    assert.equal(obs.stats(t).outcomes.allowed, 50_000, 'the counters stay exact');
  });
});
