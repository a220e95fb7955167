/** The memory store: bounded, least-recently-used eviction, nothing stored for looks, the shared log trimmed. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { limiter, rules, memoryStore, Log, type MemoryTable, type RuleConfig } from '../../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** bytesPerKey — heap and array-buffer bytes per key that `fill` keeps (key strings included). */
function bytesPerKey(n: number, fill: (n: number) => unknown): number {
  const used = () => {
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  gc(); gc();
  const before = used();
  const keep = fill(n);
  gc(); gc();
  const after = used();
  assert.ok(keep);
  return (after - before) / n;
}

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

describe('memory store: memory per client', () => {
  it('a sliding-log client with a few logged requests costs <= 150 bytes (key, Map entry, LRU and log included)', () => {
    const n = 50_000;
    for (const [what, policy, per] of [['one slidingLog rule, 3 requests', [rules.slidingLog({ limit: 10, per: '1m' })], 3],
      ['1/s; 20/min; 800/day, 3 requests', '1/s; 20/min; 800/day', 3]] as const) {
      const b = bytesPerKey(n, (count) => {
        const store = memoryStore({ maxKeys: count });
        const lim = limiter({ rules: policy as string | RuleConfig[], store });
        for (let i = 0; i < count; i++) for (let k = 0; k < per; k++) lim.checkSync(`user:${i}`, { now: 1_700_000_000_000 + k * 1_000 });
        return lim;
      });
      assert.ok(b <= 150, `${what}: ${b.toFixed(1)} bytes per client`);
    }
  });

  it('a log longer than the slot holds gets an array of its own, and goes back into the slot when it is short again', () => {
    const store = memoryStore({ maxKeys: 10 });
    const lim = limiter({ rules: [rules.slidingLog({ limit: 100, per: '10s' })], store });
    const table = store.attach(lim.policy) as unknown as { bigLogs: (Log | undefined)[] };
    for (let t = 0; t < 50; t++) lim.checkSync('busy', { now: t });
    for (let t = 0; t < 3; t++) lim.checkSync('calm', { now: t });
    assert.equal(table.bigLogs.filter((l) => l !== undefined).length, 1);
    assert.equal(lim.checkSync('busy', { now: 60, cost: 0 }).remaining, 50);
    assert.equal(lim.checkSync('busy', { now: 10_048 }).remaining, 100 - 2, 'the window (48, 10 048]: the entry at 49 and this one');
    assert.equal(table.bigLogs.filter((l) => l !== undefined).length, 0);
    assert.equal(lim.checkSync('calm', { now: 5_000, cost: 0 }).remaining, 97);
  });
});

describe('memory store: eviction keeps penalties', () => {
  const abuse = () => rules.earrrl({ limit: 30, per: '1m', halfLife: '10s' }); // strict by default

  it('a client in penalty survives a flood of 10× maxKeys fresh keys', () => {
    const maxKeys = 1_000;
    const store = memoryStore({ maxKeys });
    const lim = limiter({ rules: [abuse()], store });
    let t = 1_700_000_000_000;
    let d = lim.checkSync('abuser', { now: t });
    while (d.allowed) d = lim.checkSync('abuser', { now: (t += 10) });
    for (let i = 0; i < 200; i++) d = lim.checkSync('abuser', { now: (t += 10) }); // keeps hammering: strict, the wait grows
    const wait = d.retryAfter;
    assert.ok(wait > 10_000, `in penalty for ${wait} ms`);
    for (let i = 0; i < 10 * maxKeys; i++) lim.checkSync(`fresh:${i}`, { now: t });
    assert.equal((store.attach(lim.policy) as MemoryTable).size, maxKeys);
    const after = lim.checkSync('abuser', { now: t, cost: 0 });
    assert.equal(after.allowed, false, 'the flood did not wipe the penalty');
    assert.ok(Math.abs(after.retryAfter - wait) < 1e-6 * wait, `retryAfter ${after.retryAfter} vs ${wait}`);
  });

  it('a client whose penalty is over is forgotten before one that is not in penalty', () => {
    const store = memoryStore({ maxKeys: 3 });
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })], store });
    lim.checkSync('p', { now: 0 });
    assert.equal(lim.checkSync('p', { now: 1 }).allowed, false); // in penalty until 1 000
    lim.checkSync('a', { now: 2 });
    lim.checkSync('b', { now: 3 });
    lim.checkSync('c', { now: 1_500 }); // p's penalty is over: its slot is taken first, a and b stay
    assert.equal(lim.checkSync('a', { now: 1_501, cost: 0 }).remaining, 1, 'a: a new window, but still tracked');
    const table = store.attach(lim.policy) as unknown as { slots: Map<string, number> };
    assert.deepEqual([...table.slots.keys()].sort(), ['a', 'b', 'c']);
  });

  it('a full table of penalties gives up one whose penalty ended first, not the oldest (fast-check found: a refusal of cost 2)', () => {
    // maxKeys 2: the abuser is refused at cost 1 (in penalty 1 s); k38 then is refused at cost 2 with 1 left (a request
    // of cost 1 would pass: its penalty is already over). A new client must take k38's slot, not the abuser's.
    const lim = limiter({ rules: [rules.slidingLog({ limit: 2, per: '1s' }), rules.fixedWindow({ limit: 4, per: '3s' })], store: memoryStore({ maxKeys: 2 }) });
    const t = 1_700_000_000_000;
    for (let i = 0; i < 3; i++) lim.checkSync('abuser', { now: t });
    assert.equal(lim.checkSync('k38', { now: t }).allowed, true);
    assert.equal(lim.checkSync('k38', { now: t, cost: 2 }).allowed, false);
    assert.equal(lim.checkSync('k1', { now: t }).allowed, true);
    const d = lim.checkSync('abuser', { now: t });
    assert.equal(d.allowed, false, 'the abuser was forgotten and admitted 1 000 ms early');
    assert.equal(d.retryAfter, 1000);
  });

  it('… and one whose penalty ends before an older one\'s (its oldest request is older)', () => {
    const lim = limiter({ rules: [rules.slidingLog({ limit: 2, per: '1s' })], store: memoryStore({ maxKeys: 2 }) });
    const t = 1_700_000_000_000;
    lim.checkSync('x', { now: t });
    lim.checkSync('abuser', { now: t + 500 });
    lim.checkSync('abuser', { now: t + 600 });
    assert.equal(lim.checkSync('abuser', { now: t + 700 }).allowed, false); // in penalty until t + 1500
    lim.checkSync('x', { now: t + 900 });
    assert.equal(lim.checkSync('x', { now: t + 950 }).allowed, false); // in penalty until t + 1000
    assert.equal(lim.checkSync('new', { now: t + 1001 }).allowed, true); // x's penalty is over: x makes room
    const d = lim.checkSync('abuser', { now: t + 1002 });
    assert.equal(d.allowed, false, 'the abuser was forgotten and admitted early');
    assert.equal(d.retryAfter, 498);
  });

  it('property: a client in penalty is never admitted early, whatever the other keys do, while the table is not all penalties', () => {
    // key 0 is the abuser, in half the steps; the others come from a pool larger than the table
    const step = fc.record({ key: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })), gap: fc.integer({ min: 0, max: 150 }), cost: fc.constantFrom(0, 1, 1, 2) });
    fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 300 }), fc.integer({ min: 2, max: 8 }), fc.constantFrom<RuleConfig[]>(
      [rules.tokenBucket({ limit: 3, per: '2s', accounting: 'strict' })],
      [rules.earrrl({ limit: 3, per: '1s', halfLife: '1s' })],
      [rules.slidingLog({ limit: 2, per: '1s' }), rules.fixedWindow({ limit: 4, per: '3s' })],
    ), (steps, maxKeys, policy) => {
      const lim = limiter({ rules: policy, store: memoryStore({ maxKeys }) });
      /** penalty — key → the end of its penalty (its last refusal's now + retryAfter), for keys whose last decision refused them */
      const penalty = new Map<string, number>();
      /**
       * held — key → the latest its penalty may end, for every key a request of cost 1 would be refused now: refused
       * at cost 1, or at a larger cost with nothing left (fast-check found: a key refused at cost 2 with 0 left is in
       * penalty too, and a table of it and the abuser is all penalties). Only counted, never asserted on.
       */
      const held = new Map<string, number>();
      let t = 1_700_000_000_000;
      for (const s of steps) {
        t += s.gap;
        const key = s.key === 0 ? 'abuser' : `k${s.key}`;
        const cost = key === 'abuser' ? 1 : s.cost;
        const d = lim.checkSync(key, { now: t, cost });
        const end = penalty.get(key);
        if (end !== undefined && t < end && cost === 1) assert.equal(d.allowed, false, `${key} admitted ${end - t} ms early`);
        if (cost > 0 || !d.allowed) {
          if (!d.allowed && d.reason === 'limited' && cost === 1) penalty.set(key, t + d.retryAfter);
          else penalty.delete(key);
          if (!d.allowed && d.reason === 'limited' && (cost === 1 || d.remaining < 1)) held.set(key, t + d.retryAfter);
          else held.delete(key);
        }
        // the guarantee holds while fewer than maxKeys clients are in penalty: stop once the table could be all penalties
        let inPenalty = 0;
        for (const e of held.values()) if (e > t) inPenalty++;
        if (inPenalty >= maxKeys) return;
      }
    }), { numRuns: 300 });
  });
});

describe('memory store: blocks and exemptions are bounded and reclaimed', () => {
  it('100 000 short bans (the fail2ban pattern over rotating keys) leave a bounded number of overrides behind', async () => {
    let now = 1_700_000_000_000;
    const store = memoryStore({ maxKeys: 1_000 });
    const lim = limiter({ rules: '5/s', store, clock: { now: () => now } });
    const table = store.attach(lim.policy) as MemoryTable;
    for (let i = 0; i < 100_000; i++) {
      await lim.block(`2001:db8:${i}::/64`, { for: 10 });
      now += 1;
      assert.ok(table.overrideCount <= 20, `${table.overrideCount} overrides held after ${i + 1} bans of 10 ms, 1 ms apart`);
    }
  });

  it('never holds more than maxKeys overrides; live blocks still hold (past the bound a new one is refused, none lifted)', async () => {
    const store = memoryStore({ maxKeys: 100 });
    const lim = limiter({ rules: '5/s', store });
    const table = store.attach(lim.policy) as MemoryTable;
    let refused = 0;
    for (let i = 0; i < 1_000; i++) await lim.block(`k${i}`).catch(() => refused++);
    assert.equal(table.overrideCount, 100);
    assert.equal(refused, 900);
    assert.equal(lim.checkSync('k99').reason, 'blocked');
    assert.equal(lim.checkSync('k0').reason, 'blocked', 'an operator\'s block is never lifted to make room (docs/memory.md)');
    assert.equal(lim.checkSync('k999').reason, 'allowed');
  });

  it('an expired exemption or block is swept even if its key is never seen again', async () => {
    let now = 1_000;
    const store = memoryStore({ maxKeys: 100 });
    const lim = limiter({ rules: '5/s', store, clock: { now: () => now } });
    const table = store.attach(lim.policy) as MemoryTable;
    await lim.exempt('a', { for: 10 });
    await lim.block('b', { for: 10 });
    now += 20;
    await lim.block('c', { for: 1_000 });
    assert.equal(table.overrideCount, 1);
    assert.equal(lim.checkSync('c').reason, 'blocked');
  });
});
