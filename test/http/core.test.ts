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
