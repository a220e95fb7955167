/**
 * Faults: redis-server killed during a load and restarted, and a server that hangs (SIGSTOP). Each failure policy
 * answers as documented, nothing rejects unhandled, the queues stay bounded by maxPending, and once Redis answers
 * again the decisions come from Redis and are right.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { limiter, type Limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { Decision } from '../../src/core/types.js';
import { RedisStore, type OnError } from '../../src/stores/redis/index.js';
import { RedisServer } from '../support/redis.js';

const unhandled: unknown[] = [];
const onUnhandled = (e: unknown): void => {
  unhandled.push(e);
};
let server: RedisServer;
before(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await RedisServer.start();
});
after(async () => {
  process.off('unhandledRejection', onUnhandled);
  await server.stop();
});

/** fromRedis — a decision Redis made (not the failure policy's). */
const fromRedis = (d: Decision): boolean => d.reason !== 'store-unavailable' && d.fallback !== true;

/** queued — what the ioredis client holds: commands waiting to be sent and sent-but-unanswered. */
function queued(client: Redis): number {
  const c = client as unknown as { offlineQueue?: { length: number }; commandQueue?: { length: number } };
  return (c.offlineQueue?.length ?? 0) + (c.commandQueue?.length ?? 0);
}

/** fiveThenLimited — a new key: five admitted, the sixth limited; returns the decisions. */
async function burst(lim: Limiter): Promise<Decision[]> {
  const key = `burst-${randomBytes(4).toString('hex')}`;
  const ds: Decision[] = [];
  for (let i = 0; i < 6; i++) ds.push(await lim.check(key));
  return ds;
}

async function recover(lim: Limiter): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (fromRedis(await lim.peek('probe'))) return;
    await sleep(50);
  }
  throw new Error('the store did not come back to Redis');
}

function setup(onError: OnError, options: { maxPending?: number; timeout?: number } = {}): { client: Redis; store: RedisStore; lim: Limiter } {
  // A client with ioredis's defaults (offline queue on, 20 retries per request): the store must bound it itself.
  const client = new Redis({ host: '127.0.0.1', port: server.port });
  client.on('error', () => {});
  const store = new RedisStore({ client, onError, prefix: `fault:${randomBytes(4).toString('hex')}:`, timeout: options.timeout ?? 300, maxPending: options.maxPending ?? 1_000 });
  const lim = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1h' })], store });
  return { client, store, lim };
}

describe('redis-server killed during a load, then restarted', () => {
  for (const onError of ['deny', 'allow', 'memory'] as const) {
    test(`onError: '${onError}'`, async () => {
      const { client, store, lim } = setup(onError);
      try {
        await recover(lim);
        assert.ok((await burst(lim)).every((d, i) => fromRedis(d) && d.allowed === i < 5));

        // A load of 16 concurrent callers on many keys, through the kill.
        let stop = false;
        const seen: Decision[] = [];
        const load = Promise.all(Array.from({ length: 16 }, async (_, w) => {
          for (let i = 0; !stop; i++) {
            seen.push(await lim.check(`load-${w}-${i % 50}`));
            if (i % 20 === 0) await sleep(1);
          }
        }));
        await sleep(150);
        await server.kill();
        await sleep(400);
        // While it is down: 20 000 checks at once answer quickly, and nothing piles up.
        const t0 = performance.now();
        const flood = await Promise.all(Array.from({ length: 20_000 }, (_, i) => lim.check(`flood-${i % 100}`)));
        const floodMs = performance.now() - t0;
        assert.ok(store.pending <= store.maxPending, `pending ${store.pending}`);
        assert.ok(queued(client) <= store.maxPending, `ioredis queue ${queued(client)}`);
        assert.ok(floodMs < 3_000, `the flood took ${floodMs} ms`);
        const outage = await burst(lim);
        stop = true;
        await load;

        for (const d of [...flood, ...outage]) {
          if (onError === 'memory') {
            assert.equal(d.fallback, true);
          } else {
            assert.equal(d.reason, 'store-unavailable');
            assert.equal(d.allowed, onError === 'allow');
            assert.equal(d.rules.length, 1);
          }
        }
        if (onError === 'memory') {
          // The fallback is a real limiter: a new key gets five, then is limited, locally.
          assert.deepEqual(outage.map((d) => d.allowed), [true, true, true, true, true, false]);
          assert.equal(outage[5].reason, 'limited');
        }
        assert.ok(seen.some(fromRedis) && seen.some((d) => !fromRedis(d)), 'the load saw Redis, then the failure policy');
        assert.ok(store.failures > 0 && store.lastError !== undefined);

        await server.spawn();
        await recover(lim);
        const back = await burst(lim);
        assert.ok(back.every(fromRedis), 'decided by Redis again');
        assert.deepEqual(back.map((d) => d.allowed), [true, true, true, true, true, false]);
        assert.equal(back[5].reason, 'limited');
        assert.deepEqual(unhandled, []);
      } finally {
        client.disconnect();
        store.close();
      }
    });
  }
});

describe('a server that hangs (SIGSTOP)', () => {
  test('checks answer by onError within the timeout; maxPending bounds what waits; recovery after SIGCONT', async () => {
    const { client, store, lim } = setup('deny', { maxPending: 200, timeout: 250 });
    try {
      await recover(lim);
      server.pause();
      const t0 = performance.now();
      const ds = await Promise.all(Array.from({ length: 3_000 }, (_, i) => lim.check(`hang-${i}`)));
      const took = performance.now() - t0;
      assert.ok(ds.every((d) => d.reason === 'store-unavailable' && !d.allowed));
      assert.ok(took >= 200 && took < 2_000, `answered after ${took} ms`);
      assert.ok(store.pending <= 200, `pending ${store.pending}`);
      assert.ok(queued(client) <= 200, `ioredis queue ${queued(client)}`);
      server.resume();
      await recover(lim);
      const back = await burst(lim);
      assert.deepEqual(back.map((d) => d.allowed), [true, true, true, true, true, false]);
      assert.ok(back.every(fromRedis));
      assert.deepEqual(unhandled, []);
    } finally {
      server.resume();
      client.disconnect();
      store.close();
    }
  });
});

describe('admin calls while Redis is down', () => {
  test('block, unblock, reset reject (they are not decided locally); check still answers', async () => {
    const { client, store, lim } = setup('memory');
    try {
      await recover(lim);
      await server.kill();
      await sleep(200);
      await assert.rejects(lim.block('x'), /ratekeeper\/redis/);
      await assert.rejects(lim.unblock('x'), /ratekeeper\/redis/);
      await assert.rejects(lim.reset('x'), /ratekeeper\/redis/);
      assert.equal((await lim.check('x')).fallback, true);
      await server.spawn();
      await recover(lim);
      await lim.block('x', { reason: 'back' });
      const d = await lim.check('x');
      assert.equal(d.reason, 'blocked');
      assert.equal(d.blockReason, 'back');
      assert.deepEqual(unhandled, []);
    } finally {
      client.disconnect();
      store.close();
    }
  });
});

describe("onError: 'memory' keeps the blocks and exemptions this instance has seen", () => {
  test('set here, or met in a check (set by another instance), hold during the outage; lifted ones do not', async () => {
    const prefix = `fault:${randomBytes(4).toString('hex')}:`;
    const client = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    const other = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
    other.on('error', () => {});
    const make = (c: Redis): { store: RedisStore; lim: Limiter } => {
      const store = new RedisStore({ client: c, onError: 'memory', prefix, timeout: 300 });
      return { store, lim: limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1h' })], store }) };
    };
    const here = make(client);
    const there = make(other);
    try {
      await recover(here.lim);
      await here.lim.block('banned', { reason: 'abuse' });
      await here.lim.exempt('vip');
      await here.lim.block('lifted');
      await here.lim.unblock('lifted');
      await there.lim.block('seen', { reason: 'fail2ban', for: '1h' });
      await there.lim.exempt('seen-vip', { for: '1h' });
      await there.lim.block('seen-lifted');
      for (const k of ['seen', 'seen-vip', 'seen-lifted']) assert.ok(fromRedis(await here.lim.check(k)));
      await there.lim.unblock('seen-lifted');
      assert.equal((await here.lim.check('seen-lifted')).allowed, true);
      await server.kill();
      await sleep(200);
      const banned = await here.lim.check('banned');
      assert.equal(banned.fallback, true);
      assert.equal(banned.reason, 'blocked');
      assert.equal(banned.blockReason, 'abuse');
      const seen = await here.lim.check('seen');
      assert.equal(seen.reason, 'blocked');
      assert.equal(seen.blockReason, 'fail2ban');
      assert.ok(seen.retryAfter > 3_500_000 && seen.retryAfter <= 3_600_000, `retryAfter ${seen.retryAfter}`);
      for (const k of ['vip', 'seen-vip']) {
        const ds = [];
        for (let i = 0; i < 8; i++) ds.push(await here.lim.check(k));
        assert.ok(ds.every((d) => d.allowed && d.reason === 'exempt' && d.fallback === true), k);
      }
      for (const k of ['lifted', 'seen-lifted', 'never']) {
        const d = await here.lim.check(k);
        assert.equal(d.fallback, true);
        assert.equal(d.allowed, true, k);
        assert.equal(d.reason, 'allowed', k);
      }
    } finally {
      await server.spawn();
      client.disconnect();
      other.disconnect();
      here.store.close();
      there.store.close();
    }
  });
});
