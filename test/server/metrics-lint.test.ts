/**
 * test/server/metrics-lint — `promtool check metrics` (Debian's prometheus package) finds no problem in a live
 * /metrics after traffic on every front end: POST /json, POST /v1/check, GET /v1/auth (admitted, refused, malformed)
 * and gRPC ShouldRateLimit. Before, prom-client's default gauges `nodejs_active_{handles,requests,resources}_total`
 * failed it ("non-counter metrics should not have "_total" suffix").
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { startService, type Running } from '../../src/server/serve.js';
import { http, metric, rls, type RlsCaller } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: api
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    detailed_metric: true
    rate_limit: { unit: minute, requests_per_unit: 1 }
policies:
  login: { rules: '2/min' }
`;

/** PROMTOOL — the linter, when installed (`apt-get install prometheus`). */
const PROMTOOL = (() => {
  const r = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  return r.error === undefined && r.status === 0 ? 'promtool' : undefined;
})();

describe('/metrics passes promtool check metrics', () => {
  let running: Running;
  let grpc: RlsCaller;
  before(async () => {
    running = await startService({ config: configFile(CONFIG), port: 0, grpcPort: 0, log: () => undefined });
    grpc = rls(running.grpcPort!);
  });
  after(async () => {
    grpc?.close();
    await running?.close();
  });

  test('after traffic on /json, /v1/check, /v1/auth and gRPC: no lint problem', async (t) => {
    const port = running.httpPort!;
    for (let i = 0; i < 3; i++) {
      await http(port, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'a' }] }, { entries: [{ key: 'path', value: `/p${i}` }] }] });
      await http(port, 'POST', '/v1/check', { policy: 'login', key: 'alice' });
      await http(port, 'GET', '/v1/auth', undefined, { headers: { 'x-ratekeeper-policy': 'login', 'x-ratekeeper-key': 'bob' } });
      await grpc.call({ domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'g' }] }] });
    }
    assert.equal((await http(port, 'POST', '/v1/check', '{"policy":')).status, 400);
    assert.equal((await http(port, 'POST', '/json', { domain: 7 })).status, 400);
    const m = await http(port, 'GET', '/metrics');
    assert.equal(m.status, 200);
    // the traffic is in it: every front end's latency, refusals, a malformed call
    for (const api of ['json', 'check', 'grpc']) assert.ok((metric(m.text, 'ratekeeper_request_duration_seconds_count', { api }) ?? 0) >= 3, `api=${api}\n${m.text}`);
    assert.ok((metric(m.text, 'ratekeeper_decisions_total', { outcome: 'over_limit' }) ?? 0) > 0);
    assert.ok((metric(m.text, 'ratekeeper_bad_requests_total') ?? 0) >= 2);
    // the sum of the per-type gauges replaces the dropped *_total gauges
    assert.doesNotMatch(m.text, /^nodejs_active_\w+_total /m);
    assert.match(m.text, /^# TYPE nodejs_active_handles gauge$/m);
    if (PROMTOOL === undefined) {
      t.skip('promtool is not installed here (Debian: apt-get install prometheus): the lint itself was not run');
      return;
    }
    const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: m.text, encoding: 'utf8', timeout: 20_000 });
    assert.equal(lint.status, 0, `promtool check metrics (exit ${lint.status}):\n${lint.stdout}${lint.stderr}`);
    assert.equal(`${lint.stdout}${lint.stderr}`.trim(), '', 'no lint problem printed');
  });
});
