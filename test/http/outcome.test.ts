/**
 * test/http/outcome — counting by outcome (express-rate-limit's skipFailedRequests / skipSuccessfulRequests): the
 * middleware charges a request when it decides it and gives the charge back (limiter.refund) once the response's
 * status says that outcome is not counted. On every adapter (real servers, real HTTP), on the memory store and on a
 * real Redis; the brute-force limit of a login form is the case: only failed logins count.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { memoryStore, type Store } from '../../src/index.js';
import { rateLimit as nodeLimit } from '../../src/http/node.js';
import { redisStore } from '../../src/stores/redis/index.js';
import { uniquePrefix, useRedis } from '../support/redis-suite.js';
import { ADAPTERS, request, type App, type Build } from './apps.js';

/** statuses — the statuses of `n` sequential POSTs to `url` whose handler answers `status`. */
async function statuses(url: string, status: number, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(url, { method: 'POST', headers: { 'x-status': String(status) } })).status);
  return out;
}

function outcomes(name: string, build: Build, store: () => Store): void {
  describe(name, () => {
    it('skipSuccessfulRequests: only failed logins count (3/1m): 5 successes, 3 failures, then 429', async () => {
      const app: App = await build([{ method: 'POST', path: '/login', limit: () => ({ rules: '3/1m', store: store(), skipSuccessfulRequests: true }) }]);
      try {
        assert.deepEqual(await statuses(`${app.url}/login`, 200, 5), [200, 200, 200, 200, 200], 'successes are given back');
        assert.deepEqual(await statuses(`${app.url}/login`, 401, 3), [401, 401, 401], 'failures count');
        const refused = await request(`${app.url}/login`, { method: 'POST', headers: { 'x-status': '200' } });
        assert.equal(refused.status, 429, 'three failures used the limit: even a right password waits');
        assert.ok(Number(refused.headers['retry-after']) > 0);
      } finally {
        await app.close();
      }
    });

    it('skipFailedRequests with requestWasSuccessful (status < 500): 503s are given back, a 404 counts', async () => {
      const app = await build([{
        method: 'POST', path: '/api',
        limit: () => ({ rules: '2/1m', store: store(), skipFailedRequests: true, requestWasSuccessful: (_req: unknown, status: number) => status < 500 }),
      }]);
      try {
        assert.deepEqual(await statuses(`${app.url}/api`, 503, 4), [503, 503, 503, 503], 'server errors are not the client\'s');
        assert.deepEqual(await statuses(`${app.url}/api`, 404, 1), [404]);
        assert.deepEqual(await statuses(`${app.url}/api`, 200, 2), [200, 429]);
      } finally {
        await app.close();
      }
    });
  });
}

describe('counting by outcome on the memory store', () => {
  for (const [name, build] of ADAPTERS) outcomes(name, build, () => memoryStore());
});

describe('counting by outcome on a real Redis', () => {
  const redis = useRedis();
  for (const [name, build] of ADAPTERS) outcomes(`${name} (redis store)`, build, () => redisStore({ client: redis.client, prefix: uniquePrefix('outcome'), timeout: 5000 }));
});

describe('counting by outcome: misuse is an error', () => {
  it('both skips, requestWasSuccessful alone or not a function, a skip that is not a boolean', () => {
    assert.throws(() => nodeLimit({ rules: '1/s', skipFailedRequests: true, skipSuccessfulRequests: true }), /give skipFailedRequests or skipSuccessfulRequests, not both/);
    assert.throws(() => nodeLimit({ rules: '1/s', requestWasSuccessful: () => true }), /requestWasSuccessful is used only with skipFailedRequests or skipSuccessfulRequests/);
    assert.throws(() => nodeLimit({ rules: '1/s', skipFailedRequests: true, requestWasSuccessful: 5 as never }), /requestWasSuccessful must be a function/);
    assert.throws(() => nodeLimit({ rules: '1/s', skipFailedRequests: 'yes' as never }), /skipFailedRequests must be a boolean, got "yes"/);
  });
});
