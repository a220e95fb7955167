/**
 * Hot keys coalesced through the service (issue 19 part 1): concurrent `POST /v1/check` requests for one client of
 * one policy, each arriving in its own I/O callback, wait for the others of the event loop's turn (the batcher sends
 * at setImmediate, not at the end of each callback) and go to Redis as batches: exact (100 of 100/h admitted), far
 * fewer script calls than checks (INFO commandstats), counted in /metrics. With the flush at process.nextTick this
 * test saw 0 batches and one script call per request.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Agent } from 'node:http';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running } from '../../src/server/serve.js';
import { http, metric } from './procs.js';
import { configFile } from './support.js';

let redis: RedisServer;
let running: Running;
before(async () => {
  redis = await RedisServer.start();
  running = await startService({
    config: configFile("policies:\n  api: { rules: '100/h' }\n"), port: 0, redis: `redis://127.0.0.1:${redis.port}`,
    prefix: uniquePrefix('coalesce'), storeTimeout: 10_000, log: () => {},
  });
});
after(async () => {
  await running.close();
  await redis.stop();
});

const scriptCalls = (): number => {
  const info = redis.cli('INFO', 'commandstats');
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0) + Number(/cmdstat_eval:calls=(\d+)/.exec(info)?.[1] ?? 0);
};

test('400 concurrent /v1/check of one client over 50 connections: exactly 100 admitted, coalesced into batches', async () => {
  const port = running.httpPort!;
  const agent = new Agent({ keepAlive: true, maxSockets: 50 });
  // the connections opened and the scripts loaded (a look at another client) before the count starts
  await Promise.all(Array.from({ length: 50 }, () => http(port, 'POST', '/v1/check', { policy: 'api', key: 'warm', cost: 0 }, { agent })));
  redis.cli('CONFIG', 'RESETSTAT');
  const replies = await Promise.all(Array.from({ length: 400 }, () => http(port, 'POST', '/v1/check', { policy: 'api', key: 'hot' }, { agent, timeoutMs: 20_000 })));
  agent.destroy();
  assert.deepEqual([...new Set(replies.map((r) => r.status))].sort(), [200, 429]);
  assert.equal(replies.filter((r) => r.status === 200).length, 100);
  const calls = scriptCalls();
  assert.ok(calls <= 200, `${calls} script calls for 400 checks`);
  const text = (await http(port, 'GET', '/metrics')).text;
  assert.ok((metric(text, 'ratekeeper_redis_coalesced_batches_total') ?? 0) > 0);
  assert.ok((metric(text, 'ratekeeper_redis_coalesced_checks_total') ?? 0) >= 400 - calls);
});
