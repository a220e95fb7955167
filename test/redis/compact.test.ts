/**
 * The compact one-number state (policy.lua): a gcra client checked on the server's clock is stored as a small integer
 * (an object Redis shares: no value of its own) and the key's expiry, and decides exactly as the full form does —
 * across checks, refunds, compound checks, blocks and exemptions placed over it, and a reset. Explicit `now` keeps the
 * full form (its number is on the caller's clock, not the expiry's).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { limiter, type Limiter } from '../../src/limiter.js';
import { checkAll } from '../../src/multi.js';
import { rules } from '../../src/core/rules.js';
import { Policy } from '../../src/core/policy.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
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

describe('the compact form is exact', () => {
  /** readBack — the number a key holds, read atomically: compact (expiry less j/4096 ms) or full ('n' and a double); undefined when gone. */
  async function readBack(key: string): Promise<{ form: 'compact' | 'full'; number: number } | undefined> {
    const [[, value], [, expireAt]] = (await redis.client.multi().getBuffer(key).call('PEXPIRETIME', key).exec()) as [[null, Buffer | null], [null, number]];
    if (value === null) return undefined;
    if (value[0] === 0x6e) return { form: 'full', number: value.readDoubleLE(1) };
    return { form: 'compact', number: expireAt - Number(String(value)) / 4096 };
  }

  test("property: on the server's clock the stored number is the state the script computed, to the last bit", async () => {
    // 3 per second with a burst that never refuses: the state runs ahead of the clock by fractions of a ms
    const policy = new Policy({ rules: [rules.gcra({ limit: 3, per: 1_000, burst: 1e6 })] });
    const bound = store().attach(policy) as RedisBound;
    const key = bound.redisKey('x');
    const interval = 1_000 / 3;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.constantFrom(1, 0.1, 1 / 3, 2.5, 1e-9, 0), fc.double({ min: 0, max: 5, noNaN: true })), { minLength: 1, maxLength: 20 }), async (costs) => {
        for (const cost of costs) {
          const before = (await readBack(key))?.number ?? 0;
          // the script's reply ends with the server's clock it read (policy.lua): the state is max(state, clock) + cost·T
          const reply = (await redis.client.callBuffer('EVAL', bound.script.text, '1', key, '', String(cost))) as Buffer;
          const wall = reply.readDoubleLE(reply.length - 8);
          const want = cost > 0 ? (before > wall ? before : wall) + cost * interval : before;
          const got = await readBack(key);
          if (got === undefined) {
            assert.ok(want <= wall + 1, `gone while the state ${want} is ahead of the clock ${wall}`);
            continue;
          }
          assert.equal(got.form, 'compact');
          assert.equal(got.number, want, `cost ${cost}: stored ${got.number}, computed ${want}`);
        }
      }),
      { numRuns: 25 },
    );
  });

  test('a full-form state read on the server clock is written compact (j = 0 for a whole ms), and read back by an explicit now', async () => {
    const lim = gcra10();
    const key = keyOf(lim, 'f');
    const t = Math.floor(Date.now()) + 5_000;
    await lim.check('f', { now: t });
    assert.deepEqual(await readBack(key), { form: 'full', number: t + 1_000 });
    await lim.check('f');
    // ahead of the server's clock, the state moves by a whole second: a whole ms, j = 0
    assert.equal(await redis.client.get(key), '0');
    assert.deepEqual(await readBack(key), { form: 'compact', number: t + 2_000 });
    await lim.check('f', { now: t, cost: 0.5 });
    assert.deepEqual(await readBack(key), { form: 'full', number: t + 2_500 });
  });
  test('the expiry is the state: an EXPIRE by hand moves it, a PERSIST forgets it (the client starts fresh)', async () => {
    const lim = gcra10();
    const key = keyOf(lim, 'p');
    await lim.check('p', { cost: 10 });
    const j = Number(await redis.client.get(key));
    const at = Number(await redis.client.call('PEXPIRETIME', key)) + 60_000;
    await redis.client.call('PEXPIREAT', key, String(at));
    assert.deepEqual(await readBack(key), { form: 'compact', number: at - j / 4096 });
    assert.ok((await lim.check('p', { cost: 0 })).resetAfter > 60_000);
    await redis.client.persist(key);
    const d = await lim.check('p');
    assert.equal(d.remaining, 9);
    assert.ok(Number(await redis.client.call('PEXPIRETIME', key)) > 0, 'the key expires again');
  });
});
