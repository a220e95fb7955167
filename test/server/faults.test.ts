/**
 * Faults on a real service in front of a real redis-server: Redis killed (SIGKILL) under load and restarted, and a
 * Redis that hangs (SIGSTOP, then SIGCONT), with each failure policy (--on-store-error deny | allow | memory).
 * During the outage the decisions follow the policy and no call waits past the store timeout (plus a margin); the
 * service keeps answering; afterwards the decisions come from Redis again and /healthcheck is 200.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { RedisServer } from '../support/redis.js';
import { uniquePrefix } from '../support/redis-suite.js';
import { startService, type Running } from '../../src/server/serve.js';
import type { OnStoreError } from '../../src/server/serve.js';
import { http, metric, rls, waitFor, type RlsCaller } from './procs.js';
import { configFile } from './support.js';

const CONFIG = `
domain: d
descriptors:
  - key: user
    rate_limit: { unit: hour, requests_per_unit: 3, algorithm: slidingLog }
policies:
  login:
    rules: '3/h'
`;
/** TIMEOUT — the store timeout (ms); MARGIN — what a call may take beyond it on this shared, noisy machine. */
const TIMEOUT = 300;
const MARGIN = 700;

const uid = (tag: string): string => `${tag}-${randomBytes(4).toString('hex')}`;

/** Verdict — one call's answer as the test sees it. */
interface Verdict { ok: boolean; ms: number; fallback: boolean; unavailable: boolean }

/** Harness — a service on its own redis-server, with a gRPC client. */
interface Harness { redis: RedisServer; running: Running; port: number; g: RlsCaller; prefix: string; log: string[] }

async function harness(onStoreError: OnStoreError): Promise<Harness> {
  const redis = await RedisServer.start();
  const prefix = uniquePrefix('faults');
  const log: string[] = [];
  const running = await startService({
    config: configFile(CONFIG), port: 0, grpcPort: 0, redis: `redis://127.0.0.1:${redis.port}`, prefix, onStoreError, storeTimeout: TIMEOUT, log: (l) => log.push(l),
    // deny refuses every request while Redis is away: fail the health check then (--health-check-store; off by default)
    healthCheckStore: onStoreError === 'deny',
  });
  return { redis, running, port: running.httpPort!, g: rls(running.grpcPort!), prefix, log };
}

/** check — one /v1/check call, timed. */
async function check(h: Harness, key: string): Promise<Verdict> {
  const t0 = performance.now();
  const r = await http(h.port, 'POST', '/v1/check', { policy: 'login', key }, { timeoutMs: 10_000 });
  assert.ok(r.status === 200 || r.status === 429, `${r.status} ${r.text}`);
  return { ok: r.status === 200, ms: performance.now() - t0, fallback: r.json.fallback === true, unavailable: r.json.reason === 'store-unavailable' };
}

/** json, grpc — one RLS call through each front, timed: [OK?, ms]. */
async function json(h: Harness, value: string): Promise<[boolean, number]> {
  const t0 = performance.now();
  const r = await http(h.port, 'POST', '/json', { domain: 'd', descriptors: [{ entries: [{ key: 'user', value }] }] }, { timeoutMs: 10_000 });
  assert.ok(r.status === 200 || r.status === 429, `${r.status} ${r.text}`);
  return [r.status === 200, performance.now() - t0];
}
async function grpcCall(h: Harness, value: string): Promise<[boolean, number]> {
  const t0 = performance.now();
  const r = await h.g.call({ domain: 'd', descriptors: [{ entries: [{ key: 'user', value }] }] });
  return [r.overall_code === 'OK', performance.now() - t0];
}

/** load — calls through both fronts until stopped; every one must be answered (200/429, OK/OVER_LIMIT). */
function load(h: Harness): { stop(): Promise<{ sent: number; maxMs: number; errors: string[] }> } {
  let stopped = false;
  let sent = 0;
  let maxMs = 0;
  const errors: string[] = [];
  const worker = async (grpc: boolean): Promise<void> => {
    while (!stopped) {
      sent++;
      try {
        const [, ms] = grpc ? await grpcCall(h, uid('load')) : await json(h, uid('load'));
        maxMs = Math.max(maxMs, ms);
      } catch (e) {
        errors.push(String(e));
      }
    }
  };
  const workers = [...Array.from({ length: 8 }, () => worker(true)), ...Array.from({ length: 8 }, () => worker(false))];
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(workers);
      return { sent, maxMs, errors };
    },
  };
}

/** fromRedis — waits until a fresh key's decision comes from Redis again (no fallback, not store-unavailable). */
async function recovered(h: Harness): Promise<number> {
  return waitFor('decisions from Redis again', async () => {
    const v = await check(h, uid('probe'));
    return v.ok && !v.fallback && !v.unavailable;
  }, 10_000);
}

/** duringOutage — what each policy answers for a new client's four calls (limit 3) while Redis is away. */
async function duringOutage(h: Harness, policy: OnStoreError): Promise<void> {
  const key = uid('out');
  const vs: Verdict[] = [];
  for (let i = 0; i < 4; i++) vs.push(await check(h, key));
  for (const v of vs) assert.ok(v.ms < TIMEOUT + MARGIN, `a call took ${v.ms.toFixed(0)} ms, past the store timeout ${TIMEOUT} ms + ${MARGIN}`);
  if (policy === 'deny') {
    assert.deepEqual(vs.map((v) => v.ok), [false, false, false, false]);
    assert.ok(vs.every((v) => v.unavailable));
    assert.deepEqual((await json(h, uid('j')))[0], false, '/json: OVER_LIMIT (429)');
    assert.deepEqual((await grpcCall(h, uid('g')))[0], false, 'gRPC: OVER_LIMIT');
  } else if (policy === 'allow') {
    assert.deepEqual(vs.map((v) => v.ok), [true, true, true, true], 'allow: even past the limit');
    assert.ok(vs.every((v) => v.unavailable));
    assert.deepEqual((await json(h, uid('j')))[0], true);
    assert.deepEqual((await grpcCall(h, uid('g')))[0], true);
  } else {
    assert.deepEqual(vs.map((v) => v.ok), [true, true, true, false], 'memory: decided locally, still limiting');
    assert.ok(vs.every((v) => v.fallback));
    const v = uid('j');
    const js = [];
    for (let i = 0; i < 4; i++) js.push((await json(h, v))[0]);
    assert.deepEqual(js, [true, true, true, false]);
  }
}

for (const policy of ['deny', 'allow', 'memory'] as const) {
  describe(`--on-store-error ${policy}`, () => {
    let h: Harness;
    before(async () => {
      h = await harness(policy);
    });
    after(async () => {
      h.g.close();
      await h.running.close();
      await h.redis.stop();
    });

    test('Redis killed under load and restarted: the policy decides meanwhile, no call hangs, Redis decides again after', async () => {
      await recovered(h);
      const l = load(h);
      await sleep(100);
      await h.redis.kill();
      // the outage: health as the policy says, decisions as the policy says
      if (policy === 'deny') await waitFor('/healthcheck 500', async () => (await http(h.port, 'GET', '/healthcheck')).status === 500, 3000);
      else assert.equal((await http(h.port, 'GET', '/healthcheck')).status, 200);
      await duringOutage(h, policy);
      await sleep(200);
      await h.redis.spawn();
      const ms = await recovered(h);
      const { sent, maxMs, errors } = await l.stop();
      assert.deepEqual(errors, [], 'every call under load was answered');
      assert.ok(maxMs < TIMEOUT + MARGIN, `the slowest call under load took ${maxMs.toFixed(0)} ms`);
      console.log(`# ${policy}: ${sent} calls under load through the kill and restart, the slowest ${maxMs.toFixed(0)} ms; Redis deciding again ${ms.toFixed(0)} ms after the restart (noisy machine)`);
      assert.equal((await http(h.port, 'GET', '/healthcheck')).status, 200);
      // Redis decides: a new client's state is in Redis
      const key = uid('after');
      const v = await check(h, key);
      assert.ok(v.ok && !v.fallback && !v.unavailable, JSON.stringify(v));
      assert.ok(h.redis.cli('--scan', '--pattern', `${h.prefix}*`).includes(key), 'the client\'s state is in Redis');
      const m = (await http(h.port, 'GET', '/metrics')).text;
      assert.ok((metric(m, 'ratekeeper_store_errors_total') ?? 0) > 0, 'store errors counted');
      assert.equal(metric(m, 'ratekeeper_redis_fleet_instances'), 1, 'one instance in the fleet registry (or none: N = 1)');
      assert.equal(metric(m, 'ratekeeper_redis_fallback_active'), 0, 'back on Redis');
    });

    test('a hung Redis (SIGSTOP): answered by the policy within the timeout; SIGCONT: Redis decides again', async () => {
      await recovered(h);
      h.redis.pause();
      try {
        await duringOutage(h, policy);
        if (policy === 'deny') {
          const r = await http(h.port, 'GET', '/healthcheck', undefined, { timeoutMs: 5000 });
          assert.equal(r.status, 500, 'every decision is refused: not healthy');
        }
      } finally {
        h.redis.resume();
      }
      await recovered(h);
      assert.equal((await http(h.port, 'GET', '/healthcheck')).status, 200);
    });
  });
}
