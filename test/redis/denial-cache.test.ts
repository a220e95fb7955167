/**
 * The local cache of denials: under leaky accounting it answers exactly what the store would (same allowed,
 * reason, retryAfter) while sparing the round trips of an abuser; it is off where it would not be exact.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { limiter } from '../../src/limiter.js';
import { rules } from '../../src/core/rules.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { RedisStore } from '../../src/stores/redis/index.js';
import { useRedis } from '../support/redis-suite.js';

const redis = useRedis();

/** scripts — EVALSHA calls the server has run so far. */
function scripts(): number {
  const m = /cmdstat_evalsha:calls=(\d+)/.exec(redis.server.cli('INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

const policy = () => [rules.gcra({ limit: 10, per: '1s', burst: 5 }), rules.slidingLog({ limit: 50, per: '1m' })];

test('an abuser is answered locally, with the decisions the store would give', async () => {
  const store = new RedisStore({ client: redis.client, prefix: `dc:${randomBytes(4).toString('hex')}:` });
  const cached = limiter({ rules: policy(), store, denialCache: { maxKeys: 100 } });
  const reference = limiter({ rules: policy(), store: new MemoryStore() });
  assert.ok(cached.denialCache);
  const T = 1_800_000_000_000;
  const before = scripts();
  let n = 0;
  // 100 requests per second for 3 s, against 10/s: most are refused.
  for (let t = 0; t < 3_000; t += 10, n++) {
    const cost = t % 70 === 0 ? 0.5 : 1; // a cheaper request is never answered from a costlier refusal
    const a = await cached.check('abuser', { now: T + t, cost });
    const b = await reference.check('abuser', { now: T + t, cost });
    assert.equal(a.allowed, b.allowed, `t=${t}`);
    assert.equal(a.reason, b.reason, `t=${t}`);
    assert.ok(Math.abs(a.retryAfter - b.retryAfter) < 1e-6, `t=${t}: retryAfter ${a.retryAfter} vs ${b.retryAfter}`);
    assert.equal(a.remaining, b.remaining, `t=${t}`);
  }
  const calls = scripts() - before;
  const hits = cached.denialCache!.hits;
  assert.equal(calls + hits, n, 'every request was answered by Redis or by the cache');
  assert.ok(hits > n / 2, `only ${hits} of ${n} answered locally`);
});

test('reset by this limiter drops the entry; the cache is off where refusals change state', async () => {
  const store = new RedisStore({ client: redis.client, prefix: `dc:${randomBytes(4).toString('hex')}:` });
  const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1h' })], store, denialCache: true });
  await lim.check('k');
  assert.equal((await lim.check('k')).allowed, false);
  assert.equal((await lim.check('k')).allowed, false);
  assert.equal(lim.denialCache!.hits, 1);
  await lim.reset('k');
  assert.equal((await lim.check('k')).allowed, true);
  assert.equal(limiter({ rules: [rules.earrrl({ limit: 1, per: '1s', halfLife: '1s' })], store, denialCache: true }).denialCache, undefined, 'earrrl is strict');
  assert.equal(limiter({ rules: [rules.gcra({ limit: 1, per: '1s' })], store, dryRun: true, denialCache: true }).denialCache, undefined, 'dry-run');
});

test('a refusal decided by a check in flight during reset, exempt or unblock is not remembered', async () => {
  for (const change of ['reset', 'exempt', 'unblock'] as const) {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1m' })], store: new MemoryStore(), denialCache: true });
    if (change === 'unblock') await lim.block('other');
    await lim.check('k', { now: 0 });
    const inFlight = lim.check('k', { now: 1 }); // refused by the store, answered after the change below
    if (change === 'reset') await lim.reset('k');
    else if (change === 'exempt') { await lim.exempt('k'); await lim.unexempt('k'); }
    else await lim.unblock('k');
    assert.equal((await inFlight).allowed, false);
    const after = await lim.check('k', { now: 2 });
    const expected = change === 'reset';
    assert.equal(after.allowed, expected, `${change}: the store decides (reset admits again; the others leave the window full)`);
    assert.equal(lim.denialCache!.hits, 0, `${change}: nothing answered from a refusal older than the change`);
  }
});
