/**
 * The service in local-first mode (--redis-max-unsynced, --redis-flush-every): a native policy on a real Redis decides
 * within the bound (one instance: exactly the limit), and /metrics shows ratekeeper_redis_local_* (unsynced units,
 * clients in debt, syncs and their round trips), which promtool accepts when installed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { RedisServer } from '../support/redis.js';
import { startService, type Running } from '../../src/server/serve.js';
import { http, metric } from '../server/procs.js';
import { configFile } from '../server/support.js';

let redis: RedisServer;
let running: Running;
/** yaml — the configuration with `n` requests per hour for `user`. */
const yaml = (n: number): string => `domain: api\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: ${n}, algorithm: gcra }\n`;
const config = configFile(yaml(20));
before(async () => {
  redis = await RedisServer.start();
  running = await startService({
    config, port: 0, grpcPort: 0, redis: `redis://127.0.0.1:${redis.port}`, prefix: 'lfs:',
    redisConnect: { maxUnsynced: 5, flushEvery: 20, from: {} }, log: () => undefined,
  });
});
after(async () => {
  await running?.close();
  await redis?.stop();
});

test('serve with --redis-max-unsynced 5: one instance admits exactly the limit; /metrics shows the local-first counters', async () => {
  let ok = 0;
  for (let i = 0; i < 40; i++) {
    const r = await http(running.httpPort!, 'POST', '/json', { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'alice' }] }] });
    if (r.status === 200) ok++;
  }
  assert.equal(ok, 20);
  await new Promise((r) => setTimeout(r, 60)); // the last partial flush (flushEvery 20 ms)
  const text = (await http(running.httpPort!, 'GET', '/metrics')).text;
  assert.equal(metric(text, 'ratekeeper_redis_local_unsynced_units'), 0);
  assert.equal(metric(text, 'ratekeeper_redis_local_flushed_units_total'), 20);
  assert.equal(metric(text, 'ratekeeper_redis_local_debt_clients'), 1);
  assert.ok((metric(text, 'ratekeeper_redis_local_syncs_total') ?? 0) >= 4);
  assert.ok((metric(text, 'ratekeeper_redis_local_sync_seconds_total') ?? 0) > 0);
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (promtool.error === undefined) assert.equal(promtool.status, 0, promtool.stdout + promtool.stderr);
  // the exact mode reads what the local-first mode wrote: one state per client (beside its sequence hash `~s` and
  // the fleet registry `{fleet}` of onError 'memory', the service's default)
  const keys = redis.cli('--scan', '--pattern', 'lfs:*').split('\n');
  assert.ok(keys.includes('lfs:{fleet}'), keys.join(' '));
  assert.equal(keys.filter((k) => !k.endsWith('~s') && k !== 'lfs:{fleet}').length, 1, keys.join(' '));
});

test('50 reloads that change the limit: the replaced policies\' local-first copies are released (the copies stay 1)', async () => {
  const body = { domain: 'api', descriptors: [{ entries: [{ key: 'user', value: 'bob' }] }] };
  for (let i = 0; i < 50; i++) {
    writeFileSync(config, yaml(1000 + i));
    await running.reload();
    await http(running.httpPort!, 'POST', '/json', body);
  }
  await new Promise((r) => setTimeout(r, 100)); // the sweep's takeovers, then the last flushes (flushEvery 20 ms)
  const text = (await http(running.httpPort!, 'GET', '/metrics')).text;
  assert.ok((metric(text, 'ratekeeper_redis_local_copies') ?? Infinity) <= 2, `${metric(text, 'ratekeeper_redis_local_copies')} copies after 50 reloads`);
  assert.equal(metric(text, 'ratekeeper_redis_local_unsynced_units'), 0);
});
