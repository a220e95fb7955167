/** The replay engine on small tables (virtual clock, memory store) and on the EARRRL document's scenarios. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rules } from '../../src/core/rules.js';
import { replay, type ReplayResult } from '../../src/sim/replay.js';
import { summarize } from '../../src/sim/summary.js';
import { scenario } from '../../src/sim/scenarios.js';
import { abuser, merge, periodic, type Trace } from '../../src/sim/trace.js';

const S = 1000;

function at(seconds: number[], key = 'k', cost = 1): Trace {
  return seconds.map((t) => ({ t: t * S, key, cost }));
}

test('fixed window 3/10s: exact admissions, cumulative counts and lockouts on a known trace', () => {
  // t (s)             0  1  2  3  4  9.999  10 11 12 13  25
  const allowed = [1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1];
  const trace = at([0, 1, 2, 3, 4, 9.999, 10, 11, 12, 13, 25]);
  const r = replay(trace, { limiters: [{ name: 'fw', rules: [rules.fixedWindow({ limit: 3, per: '10s' })] }] });
  assert.deepEqual(r.requests.map((x) => (x.allowed ? 1 : 0)), allowed);
  assert.deepEqual(r.requests.map((x) => x.reason), allowed.map((a) => (a ? 'allowed' : 'limited')));
  assert.deepEqual(r.requests.map((x) => x.cumAdmitted), [1, 2, 3, 3, 3, 3, 4, 5, 6, 6, 7]);
  assert.deepEqual(r.requests.map((x) => x.cumSent), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  assert.equal(r.requests[3].retryAfter, 7000); // refused at 3 s: the window ends at 10 s
  assert.equal(r.estimates.length, 0); // a fixed window measures no rate
  const [s] = summarize(r);
  assert.equal(s.admitted, 7);
  assert.equal(s.refused, 4);
  assert.deepEqual(s.lockouts, [{ from: 3000, to: 10000, refused: 3 }, { from: 13000, to: 25000, refused: 1 }]);
});

test('costs count in sent and admitted; a refused costly request admits nothing', () => {
  const trace: Trace = [{ t: 0, key: 'k', cost: 2 }, { t: 1, key: 'k', cost: 2 }, { t: 2, key: 'k', cost: 1 }];
  const r = replay(trace, { limiters: [{ name: 'fw', rules: [rules.fixedWindow({ limit: 3, per: '10s' })] }] });
  assert.deepEqual(r.requests.map((x) => [x.sent, x.admitted, x.cumSent, x.cumAdmitted]), [[2, 2, 2, 2], [2, 0, 4, 2], [1, 1, 5, 3]]);
});

test('several limiters replay the same trace independently; keys are counted apart', () => {
  const trace = merge({ trace: at([0, 0.5, 1, 1.5], 'a'), truth: [] }, { trace: at([0.25, 0.75], 'b'), truth: [] }).trace;
  const r = replay(trace, {
    limiters: [
      { name: 'one', rules: [rules.fixedWindow({ limit: 1, per: '10s' })] },
      { name: 'many', rules: '100/s' },
    ],
  });
  const one = r.requests.filter((x) => x.limiter === 'one');
  const many = r.requests.filter((x) => x.limiter === 'many');
  assert.deepEqual(one.map((x) => `${x.key}${x.allowed ? '+' : '-'}`), ['a+', 'b+', 'a-', 'b-', 'a-', 'a-']);
  assert.ok(many.every((x) => x.allowed));
  assert.deepEqual(r.keys, ['a', 'b']);
});

test('estimate samples are cost-0 peeks taken before the requests at the same time: they charge nothing', () => {
  const halfLife = 10 * S;
  const lambda = Math.LN2 / halfLife;
  const r = replay(at([0, 20]), {
    limiters: [{ name: 'e', rules: [rules.earrrl({ limit: 1, per: '1s', halfLife })] }],
    sampleEvery: 10 * S, from: 0, until: 30 * S,
  });
  const got = r.estimates.filter((e) => !e.after).map((e) => [e.t / S, e.rate]);
  // One request at 0: N = 1, estimate λ·e^(−λt) per ms, ×1000 per s; at 20 s the sample is before the second request.
  const want = [[0, 0], [10, 1000 * lambda * 0.5], [20, 1000 * lambda * 0.25], [30, 1000 * lambda * (1 + 0.25) * 0.5]];
  assert.equal(got.length, want.length);
  got.forEach(([t, rate], i) => {
    assert.equal(t, want[i][0]);
    assert.ok(Math.abs(rate - want[i][1]) < 1e-12, `sample at ${t} s: ${rate} vs ${want[i][1]}`);
  });
  // The decision's rate is the estimate before the request, the same as the sample at that instant.
  assert.ok(Math.abs((r.requests[1].rate as number) - want[2][1]) < 1e-12);
  // After each request, a peek at the same time gives the top of its jump: (N + 1)·λ.
  const after = r.estimates.filter((e) => e.after).map((e) => [e.t / S, e.rate]);
  assert.deepEqual(after.map(([t]) => t), [0, 20]);
  assert.ok(Math.abs(after[0][1] - 1000 * lambda) < 1e-12);
  assert.ok(Math.abs(after[1][1] - 1000 * lambda * 1.25) < 1e-12);
  assert.deepEqual(r.requests.map((x) => x.cumSent), [1, 2]); // peeks charge nothing
});

test('replay rejects an unsorted trace, two limiters of one name and a bad sampling step', () => {
  const lim = [{ name: 'x', rules: '1/s' }];
  assert.throws(() => replay(at([2, 1]), { limiters: lim }), /time order/);
  assert.throws(() => replay(at([1]), { limiters: [...lim, ...lim] }), /two limiters are named "x"/);
  assert.throws(() => replay(at([1]), { limiters: lim, sampleEvery: -1 }), /sampleEvery/);
  assert.throws(() => replay(at([1]), { limiters: [] }), /at least one limiter/);
});

test('periodic and abuser generators: exact times, no drift, [start, end)', () => {
  const p = periodic({ key: 'c', rate: 10, start: 50 * S, end: 200 * S });
  assert.equal(p.trace.length, 1500);
  assert.equal(p.trace[0].t, 50_000);
  assert.equal(p.trace[1499].t, 199_900);
  assert.deepEqual(p.truth, [{ key: 'c', from: 50_000, to: 200_000, rate: 10 }]);
  const a = abuser({ key: 'x', limit: 1, factor: 1.67, start: 0, obeyFrom: 150 * S, end: 300 * S });
  const abusing = a.trace.filter((r) => r.t < 150 * S);
  assert.equal(abusing.length, 251); // k/1.67 < 150 ⇔ k <= 250
  assert.deepEqual(a.trace.filter((r) => r.t >= 150 * S).map((r) => r.t / S), Array.from({ length: 150 }, (_, i) => 150 + i));
});

/** estimateAt — the sampled estimate of `key` at `t` ms. */
function estimateAt(r: ReplayResult, key: string, t: number): number {
  const e = r.estimates.find((x) => x.key === key && x.t === t && !x.after);
  assert.ok(e, `no sample of ${key} at ${t} ms`);
  return e.rate;
}

function runScenario(name: string): ReplayResult {
  const s = scenario(name);
  return replay(s.generated.trace, { limiters: s.limiters, sampleEvery: s.sampleEvery, from: s.from, until: s.until });
}

const CLIENTS = [['10/s', 10], ['1/s', 1], ['0.1/s', 0.1]] as const;

test('three-clients (half-life 10 s): half the true rate 10 s after the start, within a few % after 7 half-lives, halved 10 s after the stop', () => {
  const r = runScenario('three-clients');
  for (const [key, rate] of CLIENTS) {
    assert.equal(estimateAt(r, key, 49_900), 0, `${key} before the start`);
    const late = r.estimates.filter((e) => e.key === key && !e.after && e.t >= 120 * S && e.t < 200 * S).map((e) => e.rate);
    assert.equal(late.length, 800);
    const mean = late.reduce((a, b) => a + b, 0) / late.length;
    assert.ok(Math.abs(mean / rate - 1) < 0.03, `${key}: mean estimate over 120–200 s is ${mean}, true rate ${rate}`);
    // Nothing happens between the last request (< 200 s) and 210 s: the estimate halves exactly in one half-life.
    assert.ok(Math.abs(estimateAt(r, key, 210 * S) / estimateAt(r, key, 200 * S) - 0.5) < 1e-9, `${key} halves after the stop`);
  }
  for (const [key, rate] of CLIENTS.slice(0, 2)) {
    const late = r.estimates.filter((e) => e.key === key && e.t >= 120 * S && e.t < 200 * S);
    // Every sample, before and after requests: the pre-request bias of a 1/s client is λ/(e^λ − 1) − 1 ≈ −3.4 %, and 2^−7 of the start is left.
    for (const e of late) assert.ok(Math.abs(e.rate / rate - 1) < 0.05, `${key} at ${e.t} ms: ${e.rate}`);
    assert.ok(Math.abs(estimateAt(r, key, 60 * S) / (rate / 2) - 1) < 0.05, `${key}: half the rate 10 s after the start`);
    assert.ok(Math.abs(estimateAt(r, key, 210 * S) / (rate / 2) - 1) < 0.05, `${key}: half the rate 10 s after the stop`);
  }
  assert.ok(r.requests.every((x) => x.allowed)); // 20/s is above every client
});

test('three-clients-1s: ten times faster, and a much noisier estimate (the half-life / error trade-off)', () => {
  const fast = runScenario('three-clients-1s');
  const slow = runScenario('three-clients');
  const swing = (r: ReplayResult, key: string): number => {
    const v = r.estimates.filter((e) => e.key === key && e.t >= 120 * S && e.t < 200 * S).map((e) => e.rate); // with the tops of the jumps
    return Math.max(...v) - Math.min(...v);
  };
  assert.ok(swing(fast, '1/s') > 0.5, `1 s half-life swings ${swing(fast, '1/s')}`);
  assert.ok(swing(slow, '1/s') < 0.1, `10 s half-life swings ${swing(slow, '1/s')}`);
  assert.ok(Math.abs(estimateAt(fast, '10/s', 57 * S) / 10 - 1) < 0.05, 'within 5 % after 7 half-lives (57 s)');
  assert.ok(estimateAt(slow, '10/s', 57 * S) < 4, 'the 10 s half-life is still far off at 57 s');
});

test('abuser: the window admits exactly its limit per window while abused; EARRRL locks it out until it reforms', () => {
  const r = runScenario('abuser');
  const [windowed, earrrl] = summarize(r);
  const win = r.requests.filter((x) => x.limiter === windowed.limiter);
  for (let w = 0; w < 150; w += 30) {
    const admitted = win.filter((x) => x.t >= w * S && x.t < (w + 30) * S && x.allowed).length;
    assert.equal(admitted, 30, `window [${w}, ${w + 30}) s`);
  }
  assert.ok(win.filter((x) => x.t >= 150 * S).every((x) => x.allowed), 'the obeying abuser is never refused by the window');
  assert.equal(windowed.admitted, 300);
  assert.equal(windowed.lockouts.length, 5); // once per abused window: forgiven at every boundary
  assert.equal(windowed.sent, 401);

  const ear = r.requests.filter((x) => x.limiter === earrrl.limiter);
  assert.equal(earrrl.lockouts.length, 1, 'EARRRL locks out once');
  const [out] = earrrl.lockouts;
  assert.ok(out.from > windowed.lockouts[0].from, 'a longer grace period than the window');
  assert.ok(out.from < 150 * S && out.to !== undefined && out.to > 150 * S, 'locked out while abusing, let back in after reforming');
  assert.equal(ear.filter((x) => x.t >= out.from && x.t < (out.to as number) && x.allowed).length, 0, 'nothing admitted while locked out');
  assert.ok(ear.filter((x) => x.t >= (out.to as number)).every((x) => x.allowed), 'the reformed abuser stays in');
  // The numbers this configuration gives (fixed window 30/30s vs EARRRL 1/s, half-life 20 s), pinned.
  assert.equal(out.from, ear[45].t); // the 46th request, at 45/1.67 s
  assert.equal(Math.round(out.from), 26_946);
  assert.equal(out.to, 256_000);
  assert.equal(earrrl.admitted, 89);
});

test('abuser under EARRRL with leaky accounting: refused attempts are free, so it is never locked out for long', () => {
  const s = scenario('abuser', {
    limiters: [{ name: 'leaky', rules: [rules.earrrl({ limit: 1, per: '1s', halfLife: '20s', accounting: 'leaky' })] }],
  });
  const r = replay(s.generated.trace, { limiters: s.limiters });
  const [sum] = summarize(r);
  assert.ok(sum.lockouts.length > 10, `leaky: ${sum.lockouts.length} lockouts`);
  assert.ok(sum.lockouts.every((l) => (l.to ?? Infinity) - l.from < 2 * S));
  assert.ok(sum.admitted > 250);
});
