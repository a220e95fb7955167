/**
 * Metric labels never come from a client's request except where the configuration asks (detailed_metric,
 * value_to_metric), and those under a series cap — on a real service (loopback): 30 000 distinct entry keys with a
 * request's own limit (the RLS `limit` field) leave /metrics small, and 5 000 distinct values of a detailed_metric
 * limit make at most `metricsMaxSeries` series plus one overflow series, said once in the log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { OVERFLOW } from '../../src/server/metrics.js';
import { http, metric } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 100 }
  - key: path
    detailed_metric: true
    rate_limit: { unit: hour, requests_per_unit: 100 }
`;

/** KEYS — distinct override entry keys (the attack had 100 000; 30 000 run in ~2 s here), sent 1 000 descriptors (the most one request may have) at a time. */
const KEYS = 30_000;
const PER_REQUEST = 1000;
/** CAP — the series cap of the detailed_metric case. */
const CAP = 100;

/** decisionSeries — the ratekeeper_decisions_total series of an exposition, and their distinct `limit` labels. */
function decisionSeries(text: string): { series: number; limits: Set<string> } {
  let series = 0;
  const limits = new Set<string>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('ratekeeper_decisions_total{')) continue;
    series++;
    const m = /limit="((?:[^"\\]|\\.)*)"/.exec(line);
    if (m !== null) limits.add(m[1]);
  }
  return { series, limits };
}

describe('metric series from requests', () => {
  let running: Running;
  const log: string[] = [];
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: -1, metricsMaxSeries: CAP, log: (l) => log.push(l) });
  });
  after(() => running?.close());

  test(`${KEYS} distinct entry keys with a request's own limit make no series of their own`, async (t) => {
    const t0 = performance.now();
    for (let sent = 0; sent < KEYS; sent += PER_REQUEST) {
      const descriptors = [];
      for (let i = sent; i < sent + PER_REQUEST; i++) descriptors.push({ entries: [{ key: `k${i}`, value: 'v' }], limit: { requestsPerUnit: 10, unit: 'HOUR' } });
      const r = await http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors });
      assert.equal(r.status, 200, r.text.slice(0, 200));
    }
    const sending = performance.now() - t0;
    const s0 = performance.now();
    const m = await http(running.httpPort!, 'GET', '/metrics');
    const scrape = performance.now() - s0;
    t.diagnostic(`${KEYS} override keys sent in ${sending.toFixed(0)} ms; /metrics ${m.text.length} bytes, scraped in ${scrape.toFixed(1)} ms`);
    assert.equal(m.status, 200);
    const { series, limits } = decisionSeries(m.text);
    assert.deepEqual([...limits], ['override'], 'one limit label for every request-supplied limit');
    assert.ok(series <= 3, `${series} series`);
    assert.equal(metric(m.text, 'ratekeeper_decisions_total', { domain: 'api', limit: 'override', rule: 'request_limit' }), KEYS);
    assert.ok(m.text.length < 100_000, `/metrics is ${m.text.length} bytes`);
  });

  test(`5 000 distinct values of a detailed_metric limit make at most ${CAP} series and one overflow, said once`, async () => {
    for (let sent = 0; sent < 5000; sent += PER_REQUEST) {
      const descriptors = [];
      for (let i = sent; i < sent + PER_REQUEST; i++) descriptors.push({ entries: [{ key: 'path', value: `/p/${i}` }] });
      const r = await http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors });
      assert.equal(r.status, 200, r.text.slice(0, 200));
    }
    const m = await http(running.httpPort!, 'GET', '/metrics');
    const { limits } = decisionSeries(m.text);
    const detailed = [...limits].filter((l) => l.startsWith('path_'));
    assert.equal(detailed.length, CAP);
    assert.ok(limits.has(OVERFLOW));
    assert.equal(metric(m.text, 'ratekeeper_decisions_total', { domain: 'api', limit: OVERFLOW }), 5000 - CAP);
    assert.equal(metric(m.text, 'ratekeeper_metric_series_overflow_total'), 5000 - CAP);
    // the series already counted keep counting
    const again = await http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'path', value: '/p/0' }] }] });
    assert.equal(again.status, 200);
    const m2 = await http(running.httpPort!, 'GET', '/metrics');
    assert.equal(metric(m2.text, 'ratekeeper_decisions_total', { domain: 'api', limit: 'path_/p/0' }), 2);
    assert.equal(log.filter((l) => l.includes(OVERFLOW)).length, 1, log.join('\n'));
  });

  test('the configured limits keep their labels whatever the cap', async () => {
    const r = await http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }] });
    assert.equal(r.status, 200);
    const m = await http(running.httpPort!, 'GET', '/metrics');
    assert.equal(metric(m.text, 'ratekeeper_decisions_total', { domain: 'api', limit: 'user' }), 1);
  });
});
