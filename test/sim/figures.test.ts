/** The Vega-Lite specification (plain JSON, no vega needed): panels, series, and long traces thinned without changing the lines. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rules } from '../../src/core/rules.js';
import { figureSpec } from '../../src/sim/figures.js';
import { replay } from '../../src/sim/replay.js';
import { periodic } from '../../src/sim/trace.js';

interface Point {
  limiter?: string;
  key: string;
  series: string;
  t: number;
  value: number;
}

test('one panel per limiter, sent/admitted series, estimates with the limit; a long trace is thinned, keeping each line exact at its ends and extremes', () => {
  const { trace } = periodic({ key: 'c', rate: 100, start: 0, end: 200_000 }); // 20 000 requests
  const result = replay(trace, {
    limiters: [
      { name: 'window', rules: [rules.fixedWindow({ limit: 10, per: '1s' })] },
      { name: 'earrrl', rules: [rules.earrrl({ limit: 50, per: '1s', halfLife: '10s' })] },
    ],
    sampleEvery: 10,
    from: 0,
    until: 200_000,
  });
  const spec = figureSpec(result, { title: 't', figures: ['cumulative', 'estimates'] });
  const json = JSON.stringify(spec);
  for (const want of ['"text":"window"', '"text":"earrrl"', '"domain":["sent","admitted"]', '"domain":["estimate (earrrl)","limit"]', '"values":[{"value":50,"series":"limit"}]']) {
    assert.ok(json.includes(want), `the spec has no ${want}`);
  }

  const datasets = spec.datasets as { cumulative: Point[]; estimates: Point[] };
  const cumulative = datasets.cumulative;
  assert.ok(cumulative.length < 2 * 2 * 4 * 1500 + 8, `cumulative points: ${cumulative.length}`);
  for (const limiter of ['window', 'earrrl']) {
    const admitted = cumulative.filter((p) => p.limiter === limiter && p.series === 'admitted');
    const mine = result.requests.filter((r) => r.limiter === limiter);
    assert.equal(admitted[admitted.length - 1].value, mine[mine.length - 1].cumAdmitted, `${limiter}: the line ends at the total`);
    for (let i = 1; i < admitted.length; i++) assert.ok(admitted[i].t >= admitted[i - 1].t && admitted[i].value >= admitted[i - 1].value, 'in order, never down');
  }
  assert.equal(cumulative.filter((p) => p.limiter === 'window' && p.series === 'admitted').at(-1)?.value, 2000); // 10 per 1 s window × 200

  const estimates = datasets.estimates;
  const all = result.estimates.map((e) => e.rate);
  assert.ok(all.length > 30_000 && estimates.length < 4 * 1500 + 4, `estimates: ${all.length} sampled, ${estimates.length} drawn`);
  assert.equal(Math.max(...estimates.map((p) => p.value)), Math.max(...all), 'the highest point is kept');
  assert.equal(Math.min(...estimates.map((p) => p.value)), Math.min(...all), 'the lowest point is kept');
});

test('a short replay is drawn whole', () => {
  const { trace } = periodic({ key: 'c', rate: 1, start: 0, end: 10_000 });
  const result = replay(trace, { limiters: [{ name: 'e', rules: [rules.earrrl({ limit: 1, per: '1s', halfLife: '5s' })] }], sampleEvery: 500 });
  const spec = figureSpec(result, { title: 't', figures: ['estimates'] });
  assert.equal((spec.datasets as { estimates: unknown[] }).estimates.length, result.estimates.length);
});

test('estimates asked for but no rule measures a rate: the plot shows what was admitted instead', () => {
  const { trace } = periodic({ key: 'c', rate: 2, start: 0, end: 10_000 });
  const result = replay(trace, { limiters: [{ name: 'w', rules: [rules.fixedWindow({ limit: 5, per: '10s' })] }], sampleEvery: 500 });
  const spec = figureSpec(result, { title: 't', figures: ['estimates'] });
  assert.equal((spec.vconcat as unknown[]).length, 1);
  assert.equal((spec.datasets as { cumulative: unknown[] }).cumulative.length, 2 + 2 * 20 + 2);
});
