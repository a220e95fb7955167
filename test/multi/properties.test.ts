/**
 * Properties of compound requests: on the memory store and on a standalone Redis, a refused compound request
 * leaves every item that admitted it (leaky rules) exactly as before — a look of cost 0 at the same time sees the
 * same; on a Redis Cluster (decide, then refund), concurrent compound requests from several clients on shared items
 * never admit more than a limit, and the refunds leave each counter at what was admitted.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Cluster } from 'ioredis';
import { limiter, checkAll, rules, type Limiter } from '../../src/index.js';
import type { Store } from '../../src/stores/types.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { uniquePrefix, useCluster, useRedis } from '../support/redis-suite.js';
import { same } from '../conformance/run.js';
import { ALGORITHMS, rule } from './table.js';
import { T0 } from '../conformance/scenarios.js';

const itemArb = fc.record({
  algorithm: fc.constantFrom(...ALGORITHMS),
  limit: fc.integer({ min: 1, max: 4 }),
  key: fc.constantFrom('a', 'b'),
});
const trafficArb = fc.array(fc.record({ gap: fc.integer({ min: 0, max: 3_000 }), costs: fc.array(fc.constantFrom(0, 0.5, 1, 2), { minLength: 3, maxLength: 3 }) }), { minLength: 4, maxLength: 12 });

/** refusedLeavesState — the property, on stores made by `makeStore`. */
async function refusedLeavesState(makeStore: () => Store, numRuns: number): Promise<void> {
  // Two limiters with the same rules share a client's state on Redis (the key is named by the rules, so that a fleet
  // shares it) but not on the memory store (a table per limiter): such items are one state, not two, and their
  // compound goes through decide-then-refund, approximate for the exponential limiter (docs/decisions.md).
  const distinct = (items: { algorithm: string; limit: number; key: string }[]): boolean =>
    new Set(items.map((it) => `${it.algorithm}/${it.limit}/${it.key}`)).size === items.length;
  await fc.assert(fc.asyncProperty(fc.array(itemArb, { minLength: 2, maxLength: 3 }).filter(distinct), trafficArb, async (items, traffic) => {
    const store = makeStore();
    const lims: Limiter[] = items.map((it) => limiter({ rules: [rule(it.algorithm, { limit: it.limit })], store }));
    let t = T0;
    for (const step of traffic) {
      t += step.gap;
      const parts = items.map((it, i) => ({ limiter: lims[i], key: it.key, cost: step.costs[i] }));
      const before = await Promise.all(parts.map((p) => p.limiter.peek(p.key, { now: t })));
      const r = await checkAll(parts, { now: t });
      assert.equal(r.allowed, r.decisions.every((d) => d.allowed));
      if (r.allowed) continue;
      const afterLook = await Promise.all(parts.map((p) => p.limiter.peek(p.key, { now: t })));
      r.decisions.forEach((d, i) => {
        if (d.allowed) same(afterLook[i], before[i], `item ${i} (${items[i].algorithm}) admitted but was refused elsewhere`);
      });
    }
  }), { numRuns });
}

test('memory: a refused compound request leaves the items that admitted it as they were', async () => {
  await refusedLeavesState(() => new MemoryStore(), 300);
});

describe('standalone Redis', () => {
  const redis = useRedis();
  test('a refused compound request leaves the items that admitted it as they were', async () => {
    await refusedLeavesState(() => new RedisStore({ client: redis.client, prefix: uniquePrefix('prop'), timeout: 5000 }), 40);
  });
});

describe('Redis Cluster', () => {
  const redis = useCluster();
  const clients: Cluster[] = [];
  before(() => {
    for (let i = 0; i < 2; i++) clients.push(new Cluster(redis.server.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } }));
  });
  after(() => {
    for (const c of clients) c.disconnect();
  });

  test('concurrent compound requests from several clients never admit more than a limit', async () => {
    await fc.assert(fc.asyncProperty(
      fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 5, max: 30 }),
      async (limitA, limitB, requests) => {
        const prefix = uniquePrefix('race');
        // three app servers, each with its own store and limiters, on the same cluster
        const servers = [redis.client, ...clients].map((client) => {
          const store = new RedisStore({ client, prefix, timeout: 5000 });
          return {
            a: limiter({ rules: [rules.fixedWindow({ limit: limitA, per: '1h' })], store }),
            b: limiter({ rules: [rules.slidingLog({ limit: limitB, per: '1h' })], store }),
          };
        });
        const results = await Promise.all(Array.from({ length: requests }, (_, i) => {
          const s = servers[i % servers.length];
          return checkAll([{ limiter: s.a, key: 'shared-a' }, { limiter: s.b, key: 'shared-b' }]);
        }));
        const admitted = results.filter((r) => r.allowed).length;
        assert.ok(admitted <= Math.min(limitA, limitB), `${admitted} admitted, limits ${limitA} and ${limitB}`);
        // (admitted may be fewer than the limits, even 0: a request may be refused by capacity that a concurrent one
        // was charged and then gave back)
        // the refunds gave back every refused request's charge: each counter holds what was admitted
        const a = await servers[0].a.peek('shared-a');
        const b = await servers[0].b.peek('shared-b');
        assert.equal(a.remaining, limitA - admitted);
        assert.equal(b.remaining, limitB - admitted);
      },
    ), { numRuns: 15 });
  });
});
