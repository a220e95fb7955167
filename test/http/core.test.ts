/** test/http/core — the framework-neutral core on its own (no server): verdicts from request facts. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules, memoryStore } from '../../src/index.js';
import { RateLimitCore, type Verdict } from '../../src/http/core.js';

const facts = { peer: (r: { ip: string }) => r.ip, header: () => undefined };

it('shaping whose bound the leaky burst already implies charges in one check and holds each request its delay', () => {
  let now = 1_000_000;
  let checks = 0;
  const store = memoryStore();
  const lim = limiter({ rules: [rules.leakyBucket({ limit: 10, per: '1s', burst: 2 })], store, clock: { now: () => now } });
  const original = lim.checkSync.bind(lim);
  lim.checkSync = (k, o) => { checks++; return original(k, o); };
  // burst 2 at 10/s: a delay is at most 200 ms, within the 250 ms bound
  const core = new RateLimitCore({ limiter: lim, shaping: { maxDelay: 250 } }, facts);
  const vs = [0, 1, 2].map(() => core.evaluate({ ip: '203.0.113.9' }) as Verdict);
  assert.deepEqual(vs.map((v) => [v.kind, v.delay]), [['pass', 0], ['pass', 100], ['limited', 0]]);
  assert.equal(checks, 3, 'one check per request: no look first');
  now += 100;
  assert.equal((core.evaluate({ ip: '203.0.113.9' }) as Verdict).kind, 'pass');
});

it('shaping whose bound is tighter than the leaky burst advertises as remaining only what passes the bound', () => {
  const now = 1_000_000;
  // the README's node example before it was resized: 5/s, burst 10, maxDelay 1 s: the bucket would take 9 more,
  // the bound lets 5 more through (delays 200 … 1000 ms), so r=5, then 4 … 0, and the 7th is refused
  const lim = limiter({ rules: [rules.leakyBucket({ limit: 5, per: '1s', burst: 10, name: 'smooth' })], clock: { now: () => now } });
  const core = new RateLimitCore({ limiter: lim, shaping: { maxDelay: '1s' } }, facts);
  const vs = Array.from({ length: 8 }, () => core.evaluate({ ip: '203.0.113.9' }) as Verdict);
  assert.deepEqual(vs.map((v) => [v.kind, v.delay, v.decision?.remaining, v.headers.find(([n]) => n === 'RateLimit')?.[1]]), [
    ['pass', 0, 5, '"smooth";r=5;t=1'],
    ['pass', 200, 4, '"smooth";r=4;t=1'],
    ['pass', 400, 3, '"smooth";r=3;t=1'],
    ['pass', 600, 2, '"smooth";r=2;t=1'],
    ['pass', 800, 1, '"smooth";r=1;t=1'],
    ['pass', 1000, 0, '"smooth";r=0;t=2'],
    ['limited', 0, 0, '"smooth";r=0;t=1'],
    ['limited', 0, 0, '"smooth";r=0;t=1'],
  ]);
  assert.equal(vs[0]?.decision?.rules[0]?.remaining, 5, 'the rule outcome says the same');
});
