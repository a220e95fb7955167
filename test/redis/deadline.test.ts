/**
 * Deadlines: a call the store gave up on (a timeout while Redis hangs) is answered by the failure policy, and the
 * script that Redis runs when it wakes changes nothing — a refused check is not charged, a rejected block, unblock
 * or reset does not take effect. Real redis-server, SIGSTOPped and SIGCONTed from the test.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { limiter, type Limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { Decision } from '../../src/core/types.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { RedisServer } from '../support/redis.js';

let server: RedisServer;
let client: Redis;
before(async () => {
  server = await RedisServer.start();
  client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
});
after(async () => {
  server.resume();
  client.disconnect();
  await server.stop();
});

const fromRedis = (d: Decision): boolean => d.reason !== 'store-unavailable' && d.fallback !== true;

function setup(limit = 1_000_000): { store: RedisStore; lim: Limiter } {
  const store = new RedisStore({ client, onError: 'deny', prefix: `dl:${randomBytes(4).toString('hex')}:`, timeout: 150 });
  return { store, lim: limiter({ rules: [rules.fixedWindow({ limit, per: '1h' })], store }) };
}

/** settle — resumes the server and waits until every command sent has been answered. */
async function settle(store: RedisStore): Promise<void> {
  server.resume();
  for (let i = 0; i < 250 && store.pending > 0; i++) await sleep(20);
  assert.equal(store.pending, 0);
}

describe('a check refused by a timeout is not charged', () => {
  test('10 used, 20 refused during a hang: 40 of 50 left, not 20', async () => {
    const { store, lim } = setup(50);
    try {
      for (let i = 0; i < 10; i++) assert.ok((await lim.check('k')).allowed);
      server.pause();
      const refused = await Promise.all(Array.from({ length: 20 }, () => lim.check('k')));
      assert.ok(refused.every((d) => d.reason === 'store-unavailable' && !d.allowed));
      await settle(store);
      const d = await lim.peek('k');
      assert.ok(fromRedis(d));
      assert.equal(d.remaining, 40);
    } finally {
      server.resume();
      store.close();
    }
  });

  for (const batch of [true, false]) {
    test(`checks that always give their own now (batch ${batch}): refused during a hang, not charged after it`, async () => {
      // a check with an explicit now needs no TIME, so its reply carried no server clock: the store never learned the
      // offset its deadlines are written on, and every check refused by a timeout ran when Redis woke (charged 20)
      const store = new RedisStore({ client, onError: 'deny', prefix: `dl:${randomBytes(4).toString('hex')}:`, timeout: 150, batch });
      const lim = limiter({ rules: [rules.fixedWindow({ limit: 50, per: '1h' })], store });
      const now = 1_800_000_000_000;
      try {
        for (let i = 0; i < 10; i++) assert.ok((await lim.check('k', { now })).allowed);
        await Promise.all([lim.check('w', { now, cost: 0 }), lim.check('w', { now, cost: 0 })]); // the batch script loaded
        server.pause();
        const refused = await Promise.all(Array.from({ length: 20 }, () => lim.check('k', { now })));
        assert.ok(refused.every((d) => d.reason === 'store-unavailable' && !d.allowed));
        await settle(store);
        const d = await lim.peek('k', { now });
        assert.ok(fromRedis(d));
        assert.equal(d.remaining, 40);
      } finally {
        server.resume();
        store.close();
      }
    });
  }

  test('property: whatever the hangs, Redis charged exactly the checks it admitted in time', async () => {
    const phase = fc.record({ pause: fc.integer({ min: 0, max: 400 }), checks: fc.integer({ min: 1, max: 25 }), spread: fc.integer({ min: 0, max: 300 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(phase, { minLength: 1, maxLength: 3 }), async (phases) => {
        const { store, lim } = setup();
        try {
          assert.ok(fromRedis(await lim.check('warm')));
          const key = `p-${randomBytes(4).toString('hex')}`;
          const all: Promise<Decision>[] = [];
          for (const p of phases) {
            if (p.pause > 0) server.pause();
            const t0 = performance.now();
            for (let i = 0; i < p.checks; i++) {
              all.push(lim.check(key));
              await sleep(p.spread / p.checks);
              if (performance.now() - t0 >= p.pause) server.resume();
            }
            await sleep(Math.max(0, p.pause - (performance.now() - t0)));
            server.resume();
          }
          const ds = await Promise.all(all);
          await settle(store);
          const admitted = ds.filter((d) => fromRedis(d) && d.allowed).length;
          const look = await lim.peek(key);
          assert.ok(fromRedis(look));
          assert.equal(1_000_000 - look.remaining, admitted, `charged ${1_000_000 - look.remaining}, admitted ${admitted} of ${ds.length}`);
        } finally {
          server.resume();
          store.close();
        }
      }),
      { numRuns: 6 },
    );
  });
});

describe('an admin call rejected by a timeout does not take effect', () => {
  test('block, unblock and reset rejected during a hang change nothing when Redis wakes', async () => {
    const { store, lim } = setup(5);
    try {
      assert.ok(fromRedis(await lim.check('a')));
      await lim.block('b');
      for (let i = 0; i < 3; i++) await lim.check('c');
      server.pause();
      await assert.rejects(lim.block('a'), /ratekeeper\/redis/);
      await assert.rejects(lim.unblock('b'), /ratekeeper\/redis/);
      await assert.rejects(lim.reset('c'), /ratekeeper\/redis/);
      await settle(store);
      assert.equal((await lim.peek('a')).reason, 'allowed', 'a: not blocked');
      assert.equal((await lim.peek('b')).reason, 'blocked', 'b: still blocked');
      assert.equal((await lim.peek('c')).remaining, 2, 'c: not reset');
    } finally {
      server.resume();
      store.close();
    }
  });
});
