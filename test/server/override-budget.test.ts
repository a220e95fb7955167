/**
 * Request-supplied limits (the RLS `limit` field) live in their own bounded budget (MAX_OVERRIDES limiters) that never
 * evicts an override in use — on a real service (loopback, the admin listener on as `ratekeeper serve` defaults):
 * a client at 3 of 5 under an override stays at 3 of 5 after an attacker sends 2 000 distinct override values; past
 * the budget a new value is refused naming descriptors[i].limit; an override whose window has ended makes room.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { MAX_OVERRIDES } from '../../src/server/envoy.js';
import { http } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 100 }
`;

/** VALUES — the attack's distinct override values, sent BATCH descriptors at a time. */
const VALUES = 2000;
const BATCH = 50;

const own = (value: string, requestsPerUnit: number, unit = 'HOUR') => ({ entries: [{ key: 'user', value }], limit: { requestsPerUnit, unit } });

describe('the budget of request-supplied limits', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, adminPort: 0, log: () => {} });
  });
  after(() => running?.close());
  const post = (descriptors: unknown[]) => http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors });

  test(`a client at 3 of 5 stays at 3 of 5 after ${VALUES} distinct override values; RSS grows < 100 MB`, async (t) => {
    for (let i = 0; i < 3; i++) assert.equal((await post([own('legit', 5)])).status, 200);
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let accepted = 0;
    let refused = 0;
    for (let v = 0; v < VALUES; v += BATCH) {
      const descriptors = [];
      for (let k = v; k < v + BATCH; k++) descriptors.push(own(`attacker-${k}`, 1000 + k));
      const r = await post(descriptors);
      if (r.status === 200) accepted += BATCH;
      else {
        assert.equal(r.status, 400, r.text);
        assert.match(r.json.field, /^descriptors\[\d+\]\.limit$/);
        refused += BATCH;
      }
    }
    const rss = process.memoryUsage().rss;
    t.diagnostic(`${accepted} override values accepted, ${refused} refused (their requests); RSS ${(rss0 / 2 ** 20).toFixed(0)} → ${(rss / 2 ** 20).toFixed(0)} MB`);
    assert.ok(accepted < MAX_OVERRIDES, 'the budget bites');
    // the legitimate override kept its client's count: 2 more, then over
    const fourth = await post([own('legit', 5)]);
    assert.equal(fourth.status, 200);
    assert.equal(fourth.json.statuses[0].limitRemaining, 1, 'at 4 of 5, not fresh');
    assert.equal((await post([own('legit', 5)])).status, 200);
    assert.equal((await post([own('legit', 5)])).status, 429);
    assert.ok(rss - rss0 < 100 * 2 ** 20, `RSS grew ${((rss - rss0) / 2 ** 20).toFixed(0)} MB`);
    // the configured limits are untouched by any of it
    assert.equal((await post([{ entries: [{ key: 'user', value: 'legit' }] }])).json.statuses[0].limitRemaining, 99);
  });
});

describe('an override whose window ended makes room', () => {
  let running: Running;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, log: () => {} });
  });
  after(() => running?.close());
  const post = (descriptors: unknown[]) => http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors });

  test('every slot taken by per-second overrides: a new value is refused, then accepted once their windows end', async () => {
    const descriptors = [];
    for (let k = 0; k < MAX_OVERRIDES; k++) descriptors.push(own(`s-${k}`, 10 + k, 'SECOND'));
    assert.equal((await post(descriptors)).status, 200);
    const refused = await post([own('late', 7, 'MINUTE')]);
    assert.equal(refused.status, 400);
    assert.equal(refused.json.field, 'descriptors[0].limit');
    // one second's window, and the service's second of slack for the limiter's clock: within 2.5 s they are idle
    const until = Date.now() + 5000;
    let r = refused;
    while (r.status !== 200 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      r = await post([own('late', 7, 'MINUTE')]);
    }
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.statuses[0].limitRemaining, 6);
  });
});
