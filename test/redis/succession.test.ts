/**
 * A rule change on Redis and Redis Cluster (issue 15, section 4): limiters of one id (the service names each limit
 * and policy) key their clients by the id and the state's layout, so compatible rules carry every client's state,
 * block and exemption over, judged by the new rule; instances holding different rules for one limit (a rolling change)
 * read and write one state per client; an expiry set under looser rules does not forgive early.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Cluster, Redis } from 'ioredis';
import { limiter, rules } from '../../src/index.js';
import { RedisStore, type RedisBound } from '../../src/stores/redis/index.js';
import { uniquePrefix, useCluster, useRedis, type RedisSuite } from '../support/redis-suite.js';
import { ALGORITHMS, T0, lowered, raised, rule } from '../conformance/succession.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** keysOf — every key of a prefix on the server or on every master (bounded: a test's few keys). */
async function keysOf(client: Redis | Cluster, prefix: string): Promise<string[]> {
  const nodes = 'nodes' in client && typeof client.nodes === 'function' ? (client as Cluster).nodes('master') : [client as Redis];
  const all = await Promise.all(nodes.map((n) => n.keys(`${prefix}*`)));
  return all.flat();
}

function suite(redis: RedisSuite<unknown, Redis | Cluster>): void {
  const store = (prefix = uniquePrefix('succ')): RedisStore => new RedisStore({ client: redis.client, prefix, timeout: 5000 });

  for (const a of ALGORITHMS) {
    test(`${a}: 2 used of 2/min, then 100/min: 98 left`, () => raised(store(), a, 'k'));
    test(`${a}: 50 used of 100/min, then 2/min: refused until enough age out`, () => lowered(store(), a, 'k'));
    test(`${a}: the same, the takeover lazy (succeed(old, { lazy: true }), done at the first call)`, async () => {
      await raised(store(), a, 'k', true);
      await lowered(store(), a, 'k', true);
    });
  }

  test('a block and an exemption survive a rule change (they live in the client\'s key)', async () => {
    const s = store();
    const old = limiter({ rules: [rules.gcra({ limit: 100, per: '1m' })], store: s, id: 'api' });
    await old.block('mallory', { reason: 'attack' });
    await old.exempt('ops');
    const lim = limiter({ rules: [rules.gcra({ limit: 2, per: '1m' })], store: s, id: 'api', succeeds: old });
    const d = await lim.check('mallory');
    assert.deepEqual([d.allowed, d.reason, d.blockReason], [false, 'blocked', 'attack']);
    assert.equal((await lim.check('ops')).reason, 'exempt');
    assert.deepEqual((await lim.blocks()).map((b) => b.key), ['mallory'], 'the listing follows too');
  });

  for (const [a, make] of [
    ['gcra', (limit: number) => rules.gcra({ limit, per: '1m' })],
    ['tokenBucket', (limit: number) => rules.tokenBucket({ limit, per: '1m' })],
    ['fixedWindow', (limit: number) => rules.fixedWindow({ limit, per: '1m' })],
    ['slidingLog', (limit: number) => rules.slidingLog({ limit, per: '1m' })],
  ] as const) {
    test(`${a}: a rolling change — two instances with 100/min and 2/min for one limit share one state per client`, async () => {
      const prefix = uniquePrefix('roll');
      const wide = limiter({ rules: [make(100)], store: store(prefix), id: 'edge' });
      const narrow = limiter({ rules: [make(2)], store: store(prefix), id: 'edge' });
      const at = { now: T0 };
      assert.equal((await wide.check('c', at)).allowed, true);
      assert.equal((await narrow.check('c', at)).allowed, true, 'the narrow instance sees 1 used of 2');
      assert.equal((await narrow.check('c', at)).allowed, false, 'and then 2 used: no second budget');
      assert.equal((await wide.peek('c', at)).remaining, 98, 'the wide instance sees the 2 used');
      for (let i = 0; i < 10; i++) await wide.check('c', at);
      assert.equal((await narrow.check('c', at)).allowed, false);
      assert.equal((await wide.peek('c', at)).remaining, 88);
      assert.equal((await keysOf(redis.client, prefix)).filter((k) => k.includes('{c}')).length, 1, 'one key for the client');
    });
  }

  test('without an id a limiter\'s keys are named by its rules: limiters with other limits never share a state', async () => {
    const s = store();
    const a = limiter({ rules: [rules.gcra({ limit: 2, per: '1m' })], store: s });
    const b = limiter({ rules: [rules.gcra({ limit: 3, per: '1m' })], store: s });
    await a.check('k', { now: T0 });
    await a.check('k', { now: T0 });
    assert.equal((await b.peek('k', { now: T0 })).remaining, 3);
  });

  for (const [a, from, to, forgives] of [
    // 40 used at 100 per 3 s: the key expires in 1.2 s under the old rule (long enough for a loaded machine to reach it
    // before then), in about a minute under 2 per 3 s
    ['tokenBucket', rules.tokenBucket({ limit: 100, per: '3s' }), rules.tokenBucket({ limit: 2, per: '3s' }), true],
    ['gcra', rules.gcra({ limit: 100, per: '3s' }), rules.gcra({ limit: 2, per: '3s' }), true],
    ['earrrl', rules.earrrl({ limit: 100, per: '1s', halfLife: '100ms', accounting: 'leaky' }), rules.earrrl({ limit: 2, per: '1s', halfLife: '200ms', accounting: 'leaky' }), false],
    ['exponential', rules.exponential({ limit: 100, per: '1s' }), rules.exponential({ limit: 2, per: '1s' }), false],
  ] as const) {
    test(`${a}: an expiry set under the old, looser rule does not forgive early (the keys are rewritten under the new one)`, async () => {
      const prefix = uniquePrefix('exp');
      const s = store(prefix);
      const old = limiter({ rules: [from], store: s, id: 'exp' });
      for (let i = 0; i < 40; i++) await old.check('abuser'); // on the server's clock
      const key = (await keysOf(redis.client, prefix)).find((k) => k.includes('{abuser}')) as string;
      const before = await redis.client.pttl(key);
      const lim = limiter({ rules: [to], store: s, id: 'exp', succeeds: old });
      const rewritten = await (lim.bound as RedisBound).retimed;
      assert.ok(rewritten !== undefined && rewritten >= 1, `keys rewritten: ${rewritten}`);
      const after = await redis.client.pttl(key);
      const fresh = (await lim.peek('abuser')).resetAfter; // when the new rule says the state is a fresh client's
      assert.ok(after > before && after >= fresh - 50, `PTTL under the new rule ${after} ms (was ${before}; fresh in ${fresh} ms under it)`);
      if (forgives) {
        // a used amount: still refused once the old expiry has passed
        assert.ok(before < 1_300, `PTTL under the old rule ${before} ms`);
        await sleep(before + 100);
        assert.equal((await lim.check('abuser')).allowed, false, `still refused after the old expiry (${a})`);
      }
    });
  }
}

describe('succession on a standalone Redis', () => suite(useRedis()));
describe('succession on a 3-master Redis Cluster', () => suite(useCluster()));
