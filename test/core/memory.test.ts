/** The memory store: bounded, least-recently-used eviction, nothing stored for looks, the shared log trimmed. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules, memoryStore, Log, type MemoryTable } from '../../src/index.js';

describe('memory store', () => {
  it('keeps at most maxKeys clients and forgets the least recently used one', () => {
    const store = memoryStore({ maxKeys: 3 });
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1h' })], store });
    const table = store.attach(lim.policy) as MemoryTable;
    for (const k of ['a', 'b', 'c']) assert.equal(lim.checkSync(k, { now: 0 }).allowed, true);
    assert.equal(lim.checkSync('a', { now: 1 }).allowed, false, 'a is remembered (and now the most recently used)');
    assert.equal(lim.checkSync('d', { now: 2 }).allowed, true);
    assert.equal(table.size, 3);
    assert.equal(lim.checkSync('a', { now: 3 }).allowed, false, 'a was used recently: kept');
    assert.equal(lim.checkSync('c', { now: 4 }).allowed, false, 'c was kept');
    assert.equal(lim.checkSync('b', { now: 5 }).allowed, true, 'b was the least recently used: forgotten, so fresh again');
    assert.equal(table.size, 3);
  });

  it('stays bounded under many keys, and a fresh slot after eviction is a fresh client', () => {
    const store = memoryStore({ maxKeys: 100 });
    const lim = limiter({ rules: [rules.tokenBucket({ limit: 1, per: '1h' }), rules.slidingLog({ limit: 2, per: '1h' })], store });
    for (let i = 0; i < 10_000; i++) lim.checkSync(`k${i}`, { now: i });
    assert.equal((store.attach(lim.policy) as MemoryTable).size, 100);
    const d = lim.checkSync('k0', { now: 20_000 });
    assert.deepEqual([d.allowed, d.rules[0].remaining, d.rules[1].remaining], [true, 0, 1]);
  });

  it('a look (cost 0) at an unknown key stores nothing', () => {
    const store = memoryStore({ maxKeys: 10 });
    const lim = limiter({ rules: '5/s', store });
    for (let i = 0; i < 50; i++) lim.checkSync(`peek${i}`, { cost: 0, now: 0 });
    assert.equal((store.attach(lim.policy) as MemoryTable).size, 0);
  });

  it('limiters sharing one store keep their own state', () => {
    const store = memoryStore();
    const a = limiter({ rules: '1/s', store });
    const b = limiter({ rules: '1/s', store });
    assert.equal(a.checkSync('k', { now: 0 }).allowed, true);
    assert.equal(b.checkSync('k', { now: 0 }).allowed, true);
  });

  it('rejects a bad maxKeys', () => {
    assert.throws(() => memoryStore({ maxKeys: 0 }), /memoryStore\.maxKeys must be an integer >= 1, got 0/);
    assert.throws(() => memoryStore({ maxKeys: 1.5 }), /got 1\.5/);
  });

  it('check() resolves on the memory store, checkSync() refuses an asynchronous store', async () => {
    const lim = limiter({ rules: '1/s' });
    assert.equal((await lim.check('k', { now: 0 })).allowed, true);
    const asyncStore = { attach: () => ({ sync: false, ownClock: false, evaluate: async () => { throw new Error('unused'); }, setOverride() {}, clearOverride() {}, reset() {} }) };
    assert.throws(() => limiter({ rules: '1/s', store: asyncStore as never }).checkSync('k'), /checkSync needs a synchronous store/);
  });
});

describe('Log', () => {
  it('keeps no more than the largest limit can see (and the entry that shows a window over it), coalescing a millisecond', () => {
    const log = new Log();
    for (let t = 0; t < 10_000; t++) {
      log.push(t, 1);
      log.push(t, 1);
      log.trim(t - 60_000, 20);
      assert.ok(log.size <= 11, `size ${log.size} at t=${t}`);
    }
    // the newest 10 ms hold 2 each (20, the limit): the one before them is kept, so that a window reaching back to
    // it is seen to be over the limit even by a look of cost 0; the ones before that are dropped
    assert.equal(log.size, 11);
    assert.equal(log.since(-1), 22);
  });

  it('drops what is older than the longest period', () => {
    const log = new Log();
    for (let t = 0; t < 100; t += 10) log.push(t, 1);
    log.trim(55, 1000);
    assert.equal(log.size, 4);
    assert.equal(log.since(-1), 4);
  });
});
