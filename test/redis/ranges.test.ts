/**
 * Large values on Redis: a state whose time to fresh is beyond what `PX` takes (a strict bucket charged a huge cost
 * over a long period, a block for ages) is stored without an expiry instead of making the script fail: the same
 * decisions as the memory store, and the state is kept (never forgiven early).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, type Limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import type { RuleConfig } from '../../src/core/algorithms/common.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { uniquePrefix, useRedis } from '../support/redis-suite.js';
import { same } from '../conformance/run.js';

const redis = useRedis();
const T = 1_800_000_000_000;
const keyOf = (lim: Limiter, key: string): string => (lim.store as RedisStore).attach(lim.policy).redisKey(key);

describe('expiries beyond what PX takes', () => {
  const cases: [string, RuleConfig[], number][] = [
    ['strict tokenBucket, 1 per 365 days, cost 1e7', [rules.tokenBucket({ limit: 1, per: '365d', accounting: 'strict' })], 1e7],
    ['strict gcra, 10 per 300 days, cost 1e8', [rules.gcra({ limit: 10, per: '300d', accounting: 'strict' })], 1e8],
    ['strict exponential, 1 per 1000 days, cost 1e9', [rules.exponential({ limit: 1, per: '1000d', accounting: 'strict' })], 1e9],
  ];
  for (const [name, list, cost] of cases) {
    test(name, async () => {
      const mem = limiter({ rules: list, store: new MemoryStore() });
      const red = limiter({ rules: list, store: new RedisStore({ client: redis.client, prefix: uniquePrefix('range'), timeout: 5_000 }) });
      let last = Infinity;
      for (const [t, c] of [[0, cost], [1, 1], [86_400_000, 1], [10 * 86_400_000, cost], [11 * 86_400_000, 0]] as const) {
        const want = await mem.check('k', { now: T + t, cost: c });
        const got = await red.check('k', { now: T + t, cost: c });
        assert.notEqual(got.reason, 'store-unavailable', `t=${t} cost=${c}: the script failed: ${String((red.store as RedisStore).lastError)}`);
        same(got, want, `t=${t} cost=${c}`);
        last = want.resetAfter;
      }
      const pttl = await redis.client.pttl(keyOf(red, 'k'));
      assert.ok(pttl === -1 || pttl >= last * 0.999, `PTTL ${pttl}, resetAfter ${last}: the state must outlive its debt`);
    });
  }

  test('a block of 1e300 ms (past the range the limiter takes, through the store) is stored without an expiry and holds', async () => {
    const lim = limiter({ rules: [rules.gcra({ limit: 10, per: '1s' })], store: new RedisStore({ client: redis.client, prefix: uniquePrefix('range'), timeout: 5_000 }) });
    await lim.store.attach(lim.policy).setOverride('b', { kind: 'block', for: 1e300 }, undefined);
    const d = await lim.check('b');
    assert.equal(d.reason, 'blocked');
    assert.equal(await redis.client.pttl(keyOf(lim, 'b')), -1);
  });
});
