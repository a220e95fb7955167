/**
 * Redis TIME and expiry: app servers with skewed clocks agree because the script reads the server's clock; a
 * client's key expires exactly when its state has become equivalent to a fresh client's (PTTL = the time to fresh,
 * also after the clock stepped back), an offender is not forgotten a moment early, and an override keeps its key.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { limiter, type Limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { useRedis } from '../support/redis-suite.js';

const redis = useRedis();

const store = (): RedisStore => new RedisStore({ client: redis.client, prefix: `ce:${randomBytes(4).toString('hex')}:`, timeout: 5_000 });
const keyOf = (lim: Limiter, key: string): string => (lim.store as RedisStore).attach(lim.policy).redisKey(key);
async function redisNow(): Promise<number> {
  const [s, us] = await redis.client.time();
  return Number(s) * 1000 + Number(us) / 1000;
}

describe('the clock is Redis TIME', () => {
  test('two app servers whose clocks are years apart share one limit', async () => {
    const s = store();
    const a = limiter({ rules: [rules.gcra({ limit: 2, per: '1m' })], store: s, clock: { now: () => 0 } });
    const b = limiter({ rules: [rules.gcra({ limit: 2, per: '1m' })], store: s, clock: { now: () => 4e12 } });
    assert.equal((await a.check('u')).allowed, true);
    assert.equal((await b.check('u')).allowed, true);
    const d = await a.check('u');
    assert.equal(d.allowed, false);
    assert.ok(d.retryAfter > 29_000 && d.retryAfter <= 30_000, `retryAfter ${d.retryAfter}`);
    assert.equal((await b.check('u')).allowed, false);
  });

  test('windows are aligned on the server clock', async () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '10s' })], store: store(), clock: { now: () => 123 } });
    for (let attempt = 0; ; attempt++) {
      const t1 = await redisNow();
      const d = await lim.check(`w${attempt}`);
      const t2 = await redisNow();
      const end = Math.floor(t1 / 10_000) * 10_000 + 10_000;
      if (Math.floor(t2 / 10_000) !== Math.floor(t1 / 10_000)) continue; // crossed a boundary: try again
      assert.ok(d.resetAfter <= end - t1 + 1e-6 && d.resetAfter >= end - t2 - 1e-6, `resetAfter ${d.resetAfter}, window ends in ${end - t1}…${end - t2}`);
      break;
    }
  });
});

describe('expiry: PTTL is the time to a fresh state', () => {
  const T = 1_800_000_000_000;
  const cases: [string, RuleConfig[]][] = [
    ['fixedWindow', [rules.fixedWindow({ limit: 3, per: '10s' })]],
    ['slidingWindow', [rules.slidingWindow({ limit: 3, per: '10s' })]],
    ['slidingLog', [rules.slidingLog({ limit: 3, per: '10s' })]],
    ['tokenBucket strict', [rules.tokenBucket({ limit: 3, per: '10s', accounting: 'strict' })]],
    ['leakyBucket', [rules.leakyBucket({ limit: 3, per: '10s' })]],
    ['gcra strict', [rules.gcra({ limit: 3, per: '10s', accounting: 'strict' })]],
    ['earrrl', [rules.earrrl({ limit: 3, per: '10s', halfLife: '2s' })]],
    ['exponential strict', [rules.exponential({ limit: 3, per: '10s', accounting: 'strict' })]],
    ['four rules', [rules.gcra({ limit: 3, per: '1s' }), rules.slidingLog({ limit: 5, per: '20s' }), rules.earrrl({ limit: 3, per: '10s', halfLife: '1s' }), rules.fixedWindow({ limit: 4, per: '1m' })]],
  ];
  for (const [name, list] of cases) {
    test(name, async () => {
      const lim = limiter({ rules: list, store: store() });
      // The script sets the expiry at the last check that charged a rule (admitted, or refused with a strict
      // rule): the longest time to fresh over the rules, from the state it stored then.
      const anyStrict = list.some((r) => r.accounting === 'strict');
      let charged;
      let sent = 0;
      for (let i = 0; i < 8; i++) {
        const t = performance.now();
        const d = await lim.check('offender', { now: T + i * 100 });
        if (d.allowed || anyStrict) [charged, sent] = [d, t];
      }
      const pttl = await redis.client.pttl(keyOf(lim, 'offender'));
      const elapsed = performance.now() - sent; // real time since the expiry was set, at most
      const fresh = Math.max(...charged!.rules.map((r) => r.resetAfter));
      assert.ok(fresh > 0);
      assert.ok(pttl <= Math.ceil(fresh) && pttl >= Math.ceil(fresh) - elapsed - 2, `PTTL ${pttl}, time to fresh ${fresh}, ${elapsed} ms later`);
    });
  }

  test('after the clock stepped back, the expiry counts from the latest time seen', async () => {
    const lim = limiter({ rules: [rules.tokenBucket({ limit: 3, per: '10s' })], store: store() });
    await lim.check('k', { now: T + 5_000 });
    const sent = performance.now();
    const d = await lim.check('k', { now: T });
    // Two tokens owed as of T + 5000: fresh 2 × 3333 ms after T + 5000. resetAfter at T counts from T + 5000 too (the
    // core's lag), and the key expires with it.
    const pttl = await redis.client.pttl(keyOf(lim, 'k'));
    const elapsed = performance.now() - sent;
    assert.ok(Math.abs(d.resetAfter - (5_000 + 20_000 / 3)) < 1e-6, `resetAfter ${d.resetAfter}`);
    assert.ok(pttl <= Math.ceil(5_000 + 20_000 / 3) && pttl >= Math.ceil(5_000 + 20_000 / 3) - elapsed - 2, `PTTL ${pttl}`);
  });

  test('a cost-0 look or a refused leaky attempt stores nothing and keeps the expiry', async () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1m' })], store: store() });
    await lim.peek('p', { now: T });
    assert.equal(await redis.client.exists(keyOf(lim, 'p')), 0);
    await lim.check('p', { now: T });
    const before = await redis.client.pttl(keyOf(lim, 'p'));
    await sleep(30);
    assert.equal((await lim.check('p', { now: T + 10 })).allowed, false);
    assert.ok((await redis.client.pttl(keyOf(lim, 'p'))) < before);
  });

  test('an offender is not forgotten early (real time, Redis TIME)', async () => {
    // The expiry is set when the last check runs, after `sent`: the key must exist at any moment before
    // sent + resetAfter, and be gone once returned + resetAfter has passed. A sleep that overshoots the first window
    // (a loaded machine) proves nothing, so the scenario is repeated with a new client.
    for (let attempt = 0; ; attempt++) {
      const lim = limiter({ rules: [rules.earrrl({ limit: 2, per: '1s', halfLife: '40ms' })], store: store() });
      let last;
      let sent = 0;
      for (let i = 0; i < 30; i++) {
        sent = performance.now();
        last = await lim.check('abuser');
      }
      const returned = performance.now();
      assert.equal(last!.allowed, false);
      const fresh = last!.resetAfter;
      assert.ok(fresh > 500 && fresh < 3_000, `resetAfter ${fresh}`);
      const key = keyOf(lim, 'abuser');
      await sleep(fresh - 250 - (performance.now() - sent));
      const exists = await redis.client.exists(key);
      const peek = await lim.peek('abuser');
      if (performance.now() >= sent + fresh) {
        assert.ok(attempt < 3, 'the machine is too slow to observe the window');
        continue;
      }
      assert.equal(exists, 1, 'still remembered just before its state is as good as fresh');
      assert.ok(peek.rate! > 0 && peek.resetAfter > 0, 'and its estimate is not yet negligible');
      await sleep(returned + fresh + 50 - performance.now());
      assert.equal(await redis.client.exists(key), 0, 'forgotten once it is');
      break;
    }
  });
});

describe('expiry with overrides', () => {
  test('the key lives as long as the later of the state and the override', async () => {
    const lim = limiter({ rules: [rules.gcra({ limit: 1, per: '2s' })], store: store() });
    const key = keyOf(lim, 'b');
    await lim.block('b', { for: '1s' });
    let pttl = await redis.client.pttl(key);
    assert.ok(pttl <= 1_000 && pttl > 500, `block only: ${pttl}`);
    await lim.block('b'); // until unblock
    assert.equal(await redis.client.pttl(key), -1);
    await lim.unblock('b');
    assert.equal(await redis.client.exists(key), 0, 'nothing left to remember');
    await lim.check('b');
    await lim.block('b', { for: '10s' });
    pttl = await redis.client.pttl(key);
    assert.ok(pttl <= 10_000 && pttl > 9_000, `block longer than the state: ${pttl}`);
    await lim.reset('b');
    assert.ok((await redis.client.pttl(key)) > 8_500, 'reset keeps the block');
    await lim.unblock('b');
    assert.equal(await redis.client.exists(key), 0);
    await lim.check('b');
    await lim.exempt('b');
    assert.equal(await redis.client.pttl(key), -1);
    await lim.unexempt('b');
    pttl = await redis.client.pttl(key);
    // (a one-number state expires at its deadline rounded up to the ms, and PTTL counts from the current ms rounded
    // down: up to 1 ms more than the 2 s the state holds)
    assert.ok(pttl <= 2_001 && pttl > 1_000, `back to the state's deadline: ${pttl}`);
  });
});
