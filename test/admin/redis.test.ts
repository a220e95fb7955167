/**
 * test/admin/redis — observation on Redis and Redis Cluster: the blocks-and-exemptions index the override scripts
 * keep (one bucket on a standalone server, one per master on a Cluster; pruned of ended entries), the top list
 * merged over several processes' shared summaries, and the admin API cases (cases.ts) on both.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules, type Limiter } from '../../src/index.js';
import { RedisStore, slotTag, decodeKey, encodeKey } from '../../src/stores/redis/index.js';
import { tagSlot as slotOf } from '../../src/stores/redis/slot.js';
import { useCluster, useRedis, uniquePrefix, type RedisSuite } from '../support/redis-suite.js';
import { adminCases } from './cases.js';

const KEYS = ['plain', 'user:1', 'with {braces} and %', '\uD800 lone surrogate', '<img src=x onerror=alert(1)>', 'ключ', 'a', 'b', 'c', 'd', 'e', 'f', 'g'];

function indexCases(suite: RedisSuite<unknown, any>): void {
  const make = (prefix: string, opts: object = {}): Limiter =>
    limiter({ rules: [rules.gcra({ limit: 5, per: '1s' })], store: new RedisStore({ client: suite.client, prefix }), ...opts });

  it('a namespace is below the API: client keys in and out, Redis keys those of the full key (old and new instances share state)', async () => {
    const prefix = uniquePrefix('ns');
    const store = new RedisStore({ client: suite.client, prefix });
    // two limiters of the same rules (one policy id) kept apart by their namespaces, and an instance of before the
    // namespace moved below the API, which put it in the key itself
    const a = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1h' })], store, namespace: '3:api:' });
    const b = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1h' })], store, namespace: '5:login:' });
    const old = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1h' })], store });
    const key = 'alice {x} %';
    for (let i = 0; i < 3; i++) await a.check(key);
    assert.equal((await old.peek(`3:api:${key}`)).remaining, 2, 'the old instance sees the same counter');
    assert.equal((await b.peek(key)).remaining, 5, 'the other namespace is another client');
    const id = (a.bound as unknown as { id: string }).id;
    assert.equal(await suite.client.exists(`${prefix}{${encodeKey(`3:api:${key}`)}}:${id}`), 1, 'the Redis key is byte-identical to the full key\'s');
    await old.check(`3:api:${key}`);
    assert.equal((await a.peek(key)).remaining, 1);

    await a.block(key, { reason: 'abuse' });
    await b.exempt('bob', { reason: 'partner' });
    assert.deepEqual((await a.blocks()).map((x) => [x.key, x.reason]), [[key, 'abuse']], 'listed by the client key, only in its namespace');
    assert.deepEqual(await b.blocks(), []);
    assert.deepEqual((await b.exemptions()).map((x) => [x.key, x.reason]), [['bob', 'partner']]);
    assert.deepEqual(await a.exemptions(), []);
    assert.equal((await a.inspect(key)).override?.reason, 'abuse');
    assert.equal((await old.check(`3:api:${key}`)).reason, 'blocked', 'the old instance honours the new one\'s block');
    assert.ok((await old.blocks()).some((x) => x.key === `3:api:${key}`), 'and lists it under the full key');
    await old.block('5:login:carol');
    assert.equal((await b.check('carol')).reason, 'blocked', 'the new instance honours the old one\'s block');
    assert.ok((await b.blocks()).some((x) => x.key === 'carol'));
    await a.unblock(key);
    assert.equal((await a.check(key)).reason, 'allowed');
  });

  it('blocks and exemptions are listed from the index, with reason, end and start; unblock and exempt move them', async () => {
    const lim = make(uniquePrefix('idx'));
    const t0 = Date.now();
    for (const [i, key] of KEYS.entries()) {
      if (i % 3 === 2) await lim.exempt(key, { for: '1h' });
      else await lim.block(key, { for: i % 3 === 0 ? undefined : '1h', reason: i === 0 ? undefined : `r${i}` });
    }
    const blocks = await lim.blocks();
    const exemptions = await lim.exemptions();
    assert.deepEqual(blocks.map((b) => b.key).sort(), KEYS.filter((_, i) => i % 3 !== 2).sort());
    assert.deepEqual(exemptions.map((b) => b.key).sort(), KEYS.filter((_, i) => i % 3 === 2).sort());
    const first = blocks.find((b) => b.key === KEYS[0])!;
    assert.equal(first.until, Infinity);
    assert.equal(first.reason, undefined);
    const second = blocks.find((b) => b.key === KEYS[1])!;
    assert.equal(second.reason, 'r1');
    assert.ok(second.until >= t0 + 3_600_000 - 5000 && second.until <= Date.now() + 3_600_000 + 5000);
    assert.ok(second.since! >= t0 - 5000 && second.since! <= Date.now() + 5000);
    for (const key of KEYS) assert.equal((await lim.inspect(key)).override?.key, key);

    await lim.unblock(KEYS[1]);
    await lim.exempt(KEYS[3]); // exempt replaces the block (the later wins)
    await lim.unexempt(KEYS[2]);
    const after = await lim.blocks();
    assert.ok(!after.some((b) => b.key === KEYS[1] || b.key === KEYS[3]));
    assert.ok((await lim.exemptions()).some((e) => e.key === KEYS[3] && e.until === Infinity));
    assert.ok(!(await lim.exemptions()).some((e) => e.key === KEYS[2]));
    assert.equal((await lim.inspect(KEYS[1])).override, undefined);
    assert.equal((await lim.check(KEYS[3])).reason, 'exempt');
  });

  it('an ended override is not listed, and the listing prunes it from the index', async () => {
    const prefix = uniquePrefix('prune');
    const lim = make(prefix);
    // (the short block lasts 1 s: at 50 ms it ended before the first listing twice on a loaded 2-core machine — two
    // blocks and a listing are several round trips, each waiting for the CPU)
    await lim.block('short', { for: 1000, reason: 'brief' });
    await lim.block('long', { for: '1h' });
    assert.deepEqual((await lim.blocks()).map((b) => b.key).sort(), ['long', 'short']);
    await new Promise((r) => setTimeout(r, 1030));
    assert.deepEqual((await lim.blocks()).map((b) => b.key), ['long']);
    assert.equal((await lim.inspect('short')).override, undefined);
    // pruned: the index no longer holds it (looked up where the store files it)
    const bound = (lim as any).bound;
    const { det, member } = bound.indexOf('short');
    assert.equal(await suite.client.hexists(det, member), 0);
  });

  it('the limiters of other policies or prefixes do not see each other\'s overrides', async () => {
    const prefix = uniquePrefix('iso');
    const a = make(prefix);
    const b = limiter({ rules: [rules.gcra({ limit: 6, per: '1s' })], store: new RedisStore({ client: suite.client, prefix }) });
    await a.block('k');
    assert.deepEqual((await a.blocks()).map((x) => x.key), ['k']);
    assert.deepEqual(await b.blocks(), []);
  });

  it('top merges what every process saw (each writes its summary to Redis); stopping sharing is visible', async () => {
    const prefix = uniquePrefix('top');
    const one = make(prefix, { observe: { share: 60_000 } });
    const two = make(prefix, { observe: { share: 60_000 } });
    try {
      assert.equal(one.sharing?.running, true);
      for (let i = 0; i < 30; i++) await one.check('shared-abuser');
      for (let i = 0; i < 30; i++) await two.check('shared-abuser');
      for (let i = 0; i < 40; i++) await two.check('only-two');
      await one.check('only-one');
      await one.sharing!.flush();
      await two.sharing!.flush();
      const seenByOne = await one.top({ n: 3 });
      assert.deepEqual(seenByOne.map((e) => e.key), ['shared-abuser', 'only-two', 'only-one']);
      assert.equal(seenByOne[0].requests, 60);
      const own = one.observer!.top(3, Date.now());
      assert.ok(Math.abs(seenByOne[0].rate - 2 * own[0].rate) < own[0].rate * 0.2, `merged ${seenByOne[0].rate} ≈ 2 × ${own[0].rate}`);
      const seenByTwo = await two.top({ n: 3 });
      assert.deepEqual(seenByTwo.map((e) => e.key), ['shared-abuser', 'only-two', 'only-one']);
      await one.block('only-two');
      assert.equal((await two.top({ n: 3 }))[1].blocked, true);
    } finally {
      await one.close();
      await two.close();
    }
    assert.equal(one.sharing?.running, false);
  });
}

describe('observation on a standalone Redis', () => {
  const suite = useRedis();
  indexCases(suite);
  describe('admin API', () => adminCases(() => new RedisStore({ client: suite.client, prefix: uniquePrefix('adm') })));
});

describe('observation on a Redis Cluster', () => {
  const suite = useCluster();
  it('slot tags: one short tag per hash slot; keys round-trip through the index encoding', () => {
    assert.equal(slotOf('123456789'), 0x31c3 & 16383, 'CRC16/XMODEM check value');
    const seen = new Set<number>();
    for (let s = 0; s < 16384; s += 1) seen.add(slotOf(slotTag(s)));
    assert.equal(seen.size, 16384);
    for (const k of KEYS) assert.equal(decodeKey(encodeKey(k)), k);
  });
  it('the index of a key lives on that key\'s master, in one bucket per master shared by every limiter', async () => {
    const lim = limiter({ rules: '5/s', store: new RedisStore({ client: suite.client, prefix: 'slot:' }) });
    const other = limiter({ rules: '6/s', store: new RedisStore({ client: suite.client, prefix: 'slot:' }) });
    await suite.client.ping(); // the slot table known (before it, a key is filed in the bucket of its own slot)
    const buckets = new Set<string>();
    for (const k of KEYS) {
      const { idx, det } = (lim as any).bound.indexOf(k);
      assert.equal((other as any).bound.indexOf(k).det, det);
      buckets.add(det);
      const key = (lim as any).bound.redisKey(k);
      const owner = suite.server.owner(Number(await suite.client.cluster('KEYSLOT', key)));
      assert.equal(suite.server.owner(Number(await suite.client.cluster('KEYSLOT', idx))), owner);
      assert.equal(suite.server.owner(Number(await suite.client.cluster('KEYSLOT', det))), owner);
    }
    assert.ok(buckets.size <= 3, `${buckets.size} buckets for 3 masters`);
  });
  indexCases(suite);
  describe('admin API', () => adminCases(() => new RedisStore({ client: suite.client, prefix: uniquePrefix('adm') })));
});
