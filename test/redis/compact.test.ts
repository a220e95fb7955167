/**
 * The compact one-number state (policy.lua): a gcra client checked on the server's clock is stored as a small integer
 * (an object Redis shares: no value of its own) and the key's expiry, and decides exactly as the full form does —
 * across checks, refunds, compound checks, blocks and exemptions placed over it, and a reset. Explicit `now` keeps the
 * full form (its number is on the caller's clock, not the expiry's).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { limiter, type Limiter } from '../../src/limiter.js';
import { checkAll } from '../../src/multi.js';
import { rules } from '../../src/core/rules.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { useRedis } from '../support/redis-suite.js';

const redis = useRedis();

const store = (): RedisStore => new RedisStore({ client: redis.client, prefix: `cp:${randomBytes(4).toString('hex')}:`, timeout: 5_000 });
const keyOf = (lim: Limiter, key: string): string => (lim.store as RedisStore).attach(lim.policy).redisKey(key);
/** gcra10 — 10 per 10 s with the default burst: a request every second, 10 at once. */
const gcra10 = (s = store()): Limiter => limiter({ rules: [rules.gcra({ limit: 10, per: '10s' })], store: s });

/** stored — a client's value as Redis holds it: its encoding, its text, and its expiry (ms on the server's clock). */
async function stored(lim: Limiter, key: string): Promise<{ encoding: string | null; value: string | null; expireAt: number }> {
  const k = keyOf(lim, key);
  const encoding = (await redis.client.call('OBJECT', 'ENCODING', k).catch(() => null)) as string | null;
  const value = await redis.client.get(k);
  const expireAt = Number(await redis.client.call('PEXPIRETIME', k));
  return { encoding, value, expireAt };
}

describe('the compact one-number state', () => {
  test('a gcra client on the server clock is a shared small integer with the key expiring at its deadline', async () => {
    const lim = gcra10();
    const d = await lim.check('a', { cost: 3 });
    const [s, us] = await redis.client.time();
    const now = Number(s) * 1000 + Number(us) / 1000;
    const { encoding, value, expireAt } = await stored(lim, 'a');
    assert.equal(encoding, 'int');
    assert.match(String(value), /^\d{1,4}$/);
    assert.ok(Number(value) < 4096, `j = ${value}`);
    // the state becomes a fresh client's 3 s after the check: the key expires then, rounded up to the ms
    assert.ok(expireAt >= now + 3_000 - 50 && expireAt <= now + 3_001, `expires in ${expireAt - now} ms`);
    assert.equal(d.remaining, 7);
  });

  test('decides as the memory store does, check after check, down to the refusal and its wait', async () => {
    const lim = gcra10();
    for (let i = 9; i >= 0; i--) {
      const d = await lim.check('b');
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, i);
    }
    const refused = await lim.check('b');
    assert.equal(refused.allowed, false);
    assert.ok(refused.retryAfter > 800 && refused.retryAfter <= 1_000, `retryAfter ${refused.retryAfter}`);
    assert.ok(refused.resetAfter > 9_000 && refused.resetAfter <= 10_000, `resetAfter ${refused.resetAfter}`);
    assert.equal((await stored(lim, 'b')).encoding, 'int');
  });

  test('a refund reads and writes the compact form', async () => {
    const lim = gcra10();
    await lim.check('c', { cost: 10 });
    assert.equal((await lim.check('c')).allowed, false);
    const back = await lim.refund('c', { cost: 4 });
    assert.equal(back.remaining, 4);
    assert.equal((await stored(lim, 'c')).encoding, 'int');
    assert.equal((await lim.check('c', { cost: 4 })).allowed, true);
    assert.equal((await lim.check('c')).allowed, false);
  });

  test('a compound check decides and charges compact parts all-or-nothing', async () => {
    const s = store();
    const a = gcra10(s);
    const b = limiter({ rules: [rules.gcra({ limit: 2, per: '10s' })], store: s });
    assert.equal((await checkAll([{ limiter: a, key: 'k' }, { limiter: b, key: 'k' }])).allowed, true);
    assert.equal((await checkAll([{ limiter: a, key: 'k' }, { limiter: b, key: 'k' }])).allowed, true);
    const refused = await checkAll([{ limiter: a, key: 'k' }, { limiter: b, key: 'k' }]);
    assert.equal(refused.allowed, false);
    // a was charged twice, not three times
    assert.equal((await a.check('k', { cost: 0 })).remaining, 8);
    assert.equal((await stored(a, 'k')).encoding, 'int');
  });

  test('a block over a compact state keeps it, and lifting the block gives it back', async () => {
    const lim = gcra10();
    await lim.check('d', { cost: 10 });
    await lim.block('d', { for: '1h', reason: 'abuse' });
    const blocked = await lim.check('d');
    assert.equal(blocked.allowed, false);
    assert.equal(blocked.reason, 'blocked');
    await lim.unblock('d');
    const after = await lim.check('d');
    assert.equal(after.allowed, false, 'the exhausted state survived the block');
    assert.ok(after.retryAfter > 500, `retryAfter ${after.retryAfter}`);
    await lim.exempt('d', { for: '1h' });
    assert.equal((await lim.check('d')).reason, 'exempt');
    await lim.unexempt('d');
    assert.equal((await lim.check('d')).allowed, false, 'and the exemption');
    await lim.reset('d');
    assert.equal((await lim.check('d')).remaining, 9);
  });

  test('an explicit now keeps the full form', async () => {
    const lim = gcra10();
    await lim.check('e', { now: 1_000_000 });
    const { encoding, value } = await stored(lim, 'e');
    assert.notEqual(encoding, 'int');
    assert.equal(value?.[0], 'n');
    assert.equal((await lim.check('e', { now: 1_000_000, cost: 9 })).allowed, true);
    assert.equal((await lim.check('e', { now: 1_000_000 })).allowed, false);
  });
});
