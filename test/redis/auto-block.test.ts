/**
 * autoBlock on Redis (standalone and a 3-master Cluster), on the server's clock: the refusal's retryAfter is the
 * block's end, the block is listed with its reason, concurrent refusals of one client set one block, and a compound
 * request (checkAll, one script; part by part in local-first) blocks the part its own rules refused. The same in the
 * local-first mode, where a block one instance starts is honoured by the others at their next sync: after at most
 * flushEvery, having admitted at most maxUnsynced meanwhile (docs/fleet.md).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { limiter, rules, checkAll } from '../../src/index.js';
import { RedisStore, type RedisStoreOptions } from '../../src/stores/redis/index.js';
import { useCluster, useRedis, uniquePrefix, type RedisSuite } from '../support/redis-suite.js';

const HOUR = 3_600_000;

type Client = ConstructorParameters<typeof RedisStore>[0]['client'];

function suite(redis: RedisSuite<unknown, Client>, mode: Partial<RedisStoreOptions> = {}): void {
  it('the first refusal blocks for an hour from the refusal, on the server\'s clock; listed with its reason; unblock lifts it', async () => {
    const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('auto'), timeout: 5000, ...mode });
    // 3 an hour (no window boundary in a test); a refused request waits 20 min under the rule, 1 h under the block
    const lim = limiter({ rules: [rules.tokenBucket({ limit: 3, per: '1h' })], store, autoBlock: { for: '1h' } });
    for (let i = 0; i < 3; i++) assert.equal((await lim.check('client')).allowed, true);
    const refused = await lim.check('client');
    assert.equal(refused.reason, 'limited');
    assert.equal(refused.retryAfter, HOUR, 'the block\'s end, not the rule\'s 20 minutes');
    const blocked = await lim.check('client');
    assert.equal(blocked.reason, 'blocked');
    assert.equal(blocked.blockReason, 'automatic: refused at 3/1h');
    assert.ok(blocked.retryAfter <= HOUR && blocked.retryAfter > HOUR - 5_000, String(blocked.retryAfter));
    const [entry] = await lim.blocks();
    assert.equal(entry.key, 'client');
    assert.equal(entry.reason, 'automatic: refused at 3/1h');
    assert.equal(entry.until - (entry.since as number), HOUR, 'from the refusal, for exactly the duration');
    assert.equal((await lim.inspect('client')).override?.reason, 'automatic: refused at 3/1h');
    await lim.unblock('client');
    assert.deepEqual(await lim.blocks(), []);
    const again = await lim.check('client');
    assert.equal(again.reason, 'limited', 'the rule still refuses; a new block starts');
    assert.equal(again.retryAfter, HOUR);
  });

  it('20 concurrent refusals of one client set one block, and none replaces an operator\'s', async () => {
    const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('auto'), timeout: 5000, ...mode });
    const lim = limiter({ rules: [rules.gcra({ limit: 1, per: '1h' })], store, autoBlock: { for: '10m', reason: 'hammering' } });
    assert.equal((await lim.check('c')).allowed, true);
    const ds = await Promise.all(Array.from({ length: 20 }, () => lim.check('c')));
    assert.ok(ds.every((d) => !d.allowed), 'every one refused');
    const blocks = await lim.blocks();
    assert.equal(blocks.length, 1);
    assert.equal(blocks[0].key, 'c');
    assert.equal(blocks[0].reason, 'hammering');
    assert.equal(blocks[0].until - (blocks[0].since as number), 600_000);
    // the automatic block's write (override.lua with ifNone) leaves a block or exemption in force as it is
    await lim.bound.setOverride('c', { kind: 'block', for: 1_000, reason: 'later', ifNone: true }, undefined);
    assert.deepEqual((await lim.blocks()).map((b) => [b.reason, b.until]), [['hammering', blocks[0].until]]);
    await lim.block('manual', { reason: 'operator' });
    await lim.bound.setOverride('manual', { kind: 'block', for: 1_000, reason: 'automatic', ifNone: true }, undefined);
    assert.equal((await lim.inspect('manual')).override?.reason, 'operator');
    // an operator's exemption is never replaced by an automatic block (nothing is refused while exempt)
    await lim.exempt('c', { reason: 'partner' });
    assert.equal((await lim.check('c')).reason, 'exempt');
    assert.deepEqual((await lim.exemptions()).map((e) => e.reason), ['partner']);
  });

  it('checkAll in one script: the part its own rules refused is blocked, the other not', async () => {
    const store = new RedisStore({ client: redis.client, prefix: uniquePrefix('auto'), timeout: 5000, ...mode });
    const perUser = limiter({ rules: [rules.gcra({ limit: 1, per: '1h' })], store, autoBlock: { for: '5m' } });
    const global = limiter({ rules: [rules.gcra({ limit: 1000, per: '1h' })], store, autoBlock: { for: '5m' } });
    // one client key in both, so that the two parts share a hash slot (one script on a Cluster too)
    assert.equal((await checkAll([{ limiter: perUser, key: 'u' }, { limiter: global, key: 'u' }])).allowed, true);
    const r = await checkAll([{ limiter: perUser, key: 'u' }, { limiter: global, key: 'u' }]);
    assert.equal(r.allowed, false);
    assert.equal(r.decisions[0].reason, 'limited');
    // the rule's wait (almost an hour) is longer than the block's 5 minutes: retryAfter is the rule's
    assert.ok(r.decisions[0].retryAfter > 300_000 && r.decisions[0].retryAfter <= HOUR, String(r.decisions[0].retryAfter));
    assert.equal(r.decisions[1].allowed, true);
    assert.equal((await perUser.blocks()).length, 1);
    assert.deepEqual(await global.blocks(), []);
    assert.equal((await perUser.check('u')).reason, 'blocked');
  });
}

/** LOCAL — the local-first mode of these tests: a copy is refetched 40 ms after its sync. */
const LOCAL = { localFirst: { maxUnsynced: 3, flushEvery: 40 } };

describe('autoBlock on a standalone Redis', () => suite(useRedis()));
describe('autoBlock on a 3-master Redis Cluster', () => suite(useCluster()));
describe('autoBlock in local-first on a standalone Redis', () => {
  const redis = useRedis();
  suite(redis, LOCAL);

  it('a block one instance starts is honoured by another at its next sync: after at most flushEvery, at most maxUnsynced admitted meanwhile', async () => {
    const prefix = uniquePrefix('auto');
    const stores = [0, 1].map(() => new RedisStore({ client: redis.client, prefix, timeout: 5000, ...LOCAL }));
    const [a, b] = stores.map((store) => limiter({ rules: [rules.gcra({ limit: 10, per: '1h' })], store, autoBlock: { for: '1h' } }));
    // b holds a fresh copy of the client before a takes the whole budget
    assert.equal((await b.check('c', { cost: 0 })).allowed, true);
    for (let i = 0; i < 10; i++) assert.equal((await a.check('c')).allowed, true);
    const refused = await a.check('c');
    assert.equal(refused.reason, 'limited');
    assert.equal(refused.retryAfter, HOUR);
    const started = performance.now();
    assert.equal((await a.check('c')).reason, 'blocked', 'the instance that started it honours it at once');
    // b decides on its copy until it syncs (its budget of 3 spent, or flushEvery after its sync): then blocked
    let admitted = 0;
    let learned = -1;
    for (let i = 0; i < 50 && learned < 0; i++) {
      const d = await b.check('c');
      if (d.allowed) admitted++;
      else if (d.reason === 'blocked') learned = performance.now() - started;
    }
    assert.ok(learned >= 0, 'b learned the block');
    assert.ok(admitted <= 3, `b admitted ${admitted} before it learned the block`);
    assert.equal((await b.check('c')).blockReason, 'automatic: refused at 10/1h');
    // a third instance that last synced before the block: its first check after flushEvery is blocked
    const c = limiter({ rules: [rules.gcra({ limit: 10, per: '1h' })], store: new RedisStore({ client: redis.client, prefix, timeout: 5000, ...LOCAL }), autoBlock: { for: '1h' } });
    await c.check('other', { cost: 0 });
    await sleep(45);
    assert.equal((await c.check('c')).reason, 'blocked');
    assert.equal((await a.blocks()).length, 1, 'one block');
    // decided on the copies, not by the exact mode
    for (const store of stores) assert.equal(store.localFirstStats()?.exact, 0);
    assert.ok((stores[0].localFirstStats()?.flushedUnits ?? 0) >= 10);
  });
});
