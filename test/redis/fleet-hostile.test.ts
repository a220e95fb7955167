/**
 * The fleet fallback against odd rules and a poisoned registry (fleet.ts, lua/fleet.lua):
 * - scaling never throws: any rule the core accepts, any N (a bucket of limit 0.5 has a burst of 0.5 by default,
 *   which the core refuses when given explicitly: scaled with it, the fallback threw — from a timer, so the process
 *   crashed — as soon as Redis hung with N >= 2);
 * - the registry holding what another client wrote there: a string (every heartbeat failed WRONGTYPE, N frozen at its
 *   last count — 1 for a new instance: each admitted the whole limit), members registered forever (+inf, or further
 *   ahead than any expiry: N inflated for good), a million members (N = 10^6: the floor of one request per instance).
 * Real redis-server processes; the fallback is exercised with the server SIGSTOPped.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { rules, ALGORITHMS } from '../../src/core/rules.js';
import { Policy } from '../../src/core/policy.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import type { Algorithm } from '../../src/core/types.js';
import { RedisStore, fleetPolicy, scaleRule, type RedisBound } from '../../src/stores/redis/index.js';
import { fleetKey } from '../../src/stores/redis/fleet.js';
import { uniquePrefix, useRedis } from '../support/redis-suite.js';

/** ruleOf — a rule of `algorithm` with these options (burst only where the algorithm has one). */
function ruleOf(algorithm: Algorithm, limit: number, burst: number | undefined): RuleConfig {
  const o = { limit, per: '1h', ...(algorithm === 'earrrl' ? { halfLife: '10m' } : {}) };
  const bursty = algorithm === 'tokenBucket' || algorithm === 'leakyBucket' || algorithm === 'gcra';
  return (rules[algorithm] as (x: object) => RuleConfig)(bursty && burst !== undefined ? { ...o, burst } : o);
}

describe('scaling', () => {
  test('property: every rule the core accepts scales to any N without throwing, between one request (or the amount) and the amount / N', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ALGORITHMS),
        fc.oneof(fc.constantFrom(1e-6, 0.5, 0.999, 1, 1.5, 3, 1e15), fc.double({ min: 1e-6, max: 1e15, noNaN: true })),
        fc.option(fc.oneof(fc.constantFrom(1, 1.5, 1e15), fc.double({ min: 1, max: 1e15, noNaN: true })), { nil: undefined }),
        fc.oneof(fc.constantFrom(1, 2, 3, 7, 1e6, 2 ** 31, Number.MAX_SAFE_INTEGER), fc.integer({ min: 1, max: 1e9 })),
        (algorithm, limit, burst, n) => {
          const rule = ruleOf(algorithm, limit, burst);
          const scaled = scaleRule(rule, n);
          for (const [amount, got] of [[rule.limit, scaled.limit], [rule.burst, scaled.burst]]) {
            assert.ok(got <= amount, `${got} > ${amount}`);
            assert.ok(got >= Math.min(amount, 1) && got >= amount / n - amount * 1e-15, `${got} below the floor of ${amount} / ${n}`);
          }
          fleetPolicy(new Policy({ rules: [rule] }), n);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('standalone', () => {
  const suite = useRedis();

  test('a bucket of limit 0.5 (burst 0.5 by default) in a fleet of 2: Redis hangs, the fallback decides (it threw from the timeout and crashed the process)', async () => {
    const prefix = uniquePrefix('half');
    const fleet = { expiry: 2_000, interval: 100 };
    const a = new RedisStore({ client: suite.client, prefix, onError: 'memory', timeout: 100, fleet });
    const b = new RedisStore({ client: suite.client, prefix, onError: 'memory', timeout: 100, fleet });
    try {
      for (let i = 0; i < 100 && (a.fleetSize < 2 || b.fleetSize < 2); i++) await sleep(20);
      assert.equal(a.fleetSize, 2);
      const policy = new Policy({ rules: [rules.tokenBucket({ limit: 0.5, per: '1h' }), rules.gcra({ limit: 0.25, per: '1h', name: 'g' })] });
      const bound = a.attach(policy) as RedisBound;
      suite.server.pause();
      try {
        const ds = await Promise.all([bound.evaluate('k', 0.25, undefined), bound.evaluate('k', 0.25, undefined)]);
        assert.ok(ds.every((d) => d.fallback === true), 'decided by the fallback');
        assert.deepEqual(ds.map((d) => d.allowed), [true, false], 'the share: limit 0.25 (below one request: not divided)');
      } finally {
        suite.server.resume();
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  /** counted — N as a new store on `prefix` counts it (after its first heartbeats). */
  async function counted(prefix: string): Promise<{ n: number; beats: number }> {
    const s = new RedisStore({ client: suite.client, prefix, onError: 'memory', timeout: 500, fleet: { expiry: 1_000, interval: 50 } });
    try {
      for (let i = 0; i < 40 && s.fleet!.beats < 2; i++) await sleep(25);
      return { n: s.fleetSize, beats: s.fleet!.beats };
    } finally {
      await s.close();
    }
  }

  test('a string written over the registry: the heartbeat replaces it and counts the fleet (it failed WRONGTYPE forever, N frozen at 1)', async () => {
    const prefix = uniquePrefix('str');
    await suite.client.set(fleetKey(prefix), 'not a registry');
    const got = await counted(prefix);
    assert.ok(got.beats >= 2, `${got.beats} heartbeats answered`);
    assert.equal(got.n, 1);
    assert.equal(await suite.client.type(fleetKey(prefix)), 'none', 'unregistered at close: nothing left');
  });

  test('members registered forever (+inf, or further ahead than any expiry) are dropped; a plausible one is counted', async () => {
    const prefix = uniquePrefix('inf');
    const now = Number(String((await suite.client.time())[0])) * 1000;
    await suite.client.zadd(fleetKey(prefix), '+inf', 'forever', String(now + 2 ** 32), 'far', String(now + 60_000), 'other');
    assert.equal((await counted(prefix)).n, 2, 'this instance and the plausible one');
    assert.deepEqual(await suite.client.zrange(fleetKey(prefix), '0', '-1'), ['other']);
  });

  test('a million members: N = 10^6, and the fallback admits one request per instance — never none, never the whole limit', async () => {
    const prefix = uniquePrefix('mega');
    const now = Number(String((await suite.client.time())[0])) * 1000;
    const members: string[] = [];
    for (let i = 0; i < 1_000_000; i++) members.push(String(now + 600_000), `m${i}`);
    for (let i = 0; i < members.length; i += 100_000) await suite.client.zadd(fleetKey(prefix), ...members.slice(i, i + 100_000));
    const s = new RedisStore({ client: suite.client, prefix, onError: 'memory', timeout: 100, fleet: { expiry: 1_000, interval: 50 } });
    try {
      for (let i = 0; i < 80 && s.fleet!.beats < 1; i++) await sleep(25);
      assert.equal(s.fleetSize, 1_000_001);
      const bound = s.attach(new Policy({ rules: [rules.fixedWindow({ limit: 100, per: '1h' }), rules.gcra({ limit: 50, per: '1h', burst: 10, name: 'g' })] })) as RedisBound;
      suite.server.pause();
      try {
        const ds = await Promise.all(Array.from({ length: 5 }, () => bound.evaluate('k', 1, undefined)));
        assert.ok(ds.every((d) => d.fallback === true));
        assert.deepEqual(ds.map((d) => d.allowed), [true, false, false, false, false]);
      } finally {
        suite.server.resume();
      }
    } finally {
      await s.close();
      await suite.client.del(fleetKey(prefix));
    }
  });
});
