/**
 * test/redis/options — redisStore's options refuse a misspelled name with the closest real one (a typo of
 * `onError` would otherwise leave the failure policy at its default); spelled right, they apply (a real server).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, RatekeeperError } from '../../src/index.js';
import { redisStore } from '../../src/stores/redis/index.js';
import { useRedis, uniquePrefix } from '../support/redis-suite.js';

describe('redisStore options', () => {
  const redis = useRedis();

  it('onerror → onError, prefx → prefix; spelled right, the prefix is the keys\' prefix', async () => {
    for (const [options, message] of [
      [{ onerror: 'allow' }, 'redisStore.onerror is not an option of redisStore (did you mean `onError`?), got "allow"'],
      [{ prefx: 'api:' }, 'redisStore.prefx is not an option of redisStore (did you mean `prefix`?), got "api:"'],
      [{ timeOut: 5 }, 'redisStore.timeOut is not an option of redisStore (did you mean `timeout`?), got 5'],
    ] as const) {
      assert.throws(() => redisStore({ client: redis.client, ...options } as never), (e: unknown) => {
        assert.ok(e instanceof RatekeeperError);
        assert.equal(e.message, `ratekeeper: ${message}`);
        return true;
      });
    }
    const prefix = uniquePrefix('opts');
    const lim = limiter({ rules: '2/min', store: redisStore({ client: redis.client, prefix, onError: 'allow', timeout: 500 }) });
    assert.equal((await lim.check('k')).remaining, 1);
    const keys = await redis.client.keys(`${prefix}*`);
    assert.ok(keys.length > 0, 'the state is under the prefix');
  });
});
