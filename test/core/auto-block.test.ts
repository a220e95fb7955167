/**
 * autoBlock (rate-limiter-flexible's blockDuration) in the library, and the memory store's budgets: automatic blocks
 * never push out an operator's blocks and exemptions (the shape of issue 17: maxKeys 1000, one permanent manual block,
 * 1 500 live automatic bans), and an operator's past the budget is refused with an error, nothing lifted.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRequire } from 'node:module';
import { limiter } from '../../src/limiter.js';
import { memoryStore } from '../../src/stores/memory.js';
import { RatekeeperError } from '../../src/core/errors.js';
import { rules } from '../../src/core/rules.js';
import type { MemoryTable } from '../../src/stores/memory.js';

const T = 1_763_726_400_000;

describe('memory store: an operator\'s blocks and exemptions have their own budget', () => {
  test('maxKeys 1000: a permanent manual block holds through 1 500 live automatic bans', async () => {
    const lim = limiter({ rules: '1/1h', store: memoryStore({ maxKeys: 1000 }), autoBlock: { for: '1h' }, clock: { now: () => T } });
    await lim.block('operator-ban', { reason: 'fraud' });
    await lim.exempt('partner', { reason: 'contract' });
    for (let i = 0; i < 1500; i++) {
      const key = `bot-${i}`;
      assert.equal(lim.checkSync(key, { now: T + i }).allowed, true);
      const d = lim.checkSync(key, { now: T + i });
      assert.equal(d.reason, 'limited');
      assert.equal(d.retryAfter, 3_600_000);
    }
    const now = T + 1500;
    const ban = lim.checkSync('operator-ban', { now });
    assert.equal(ban.reason, 'blocked');
    assert.equal(ban.retryAfter, Infinity);
    assert.equal(ban.blockReason, 'fraud');
    assert.equal(lim.checkSync('partner', { now }).reason, 'exempt');
    const table = lim.bound as MemoryTable;
    assert.equal(table.overrideCount, 2);
    assert.equal(table.autoBlockCount, 1000, 'the automatic ones keep to their own budget');
    // the newest 1000 automatic bans hold; the 500 oldest ended early to make room (among themselves)
    assert.equal(lim.checkSync('bot-1499', { now }).reason, 'blocked');
    assert.equal(lim.checkSync('bot-500', { now }).reason, 'blocked');
    const blocks = await lim.blocks({ now });
    assert.equal(blocks.length, 1001);
    assert.deepEqual(blocks.find((b) => b.key === 'operator-ban'), { key: 'operator-ban', kind: 'block', until: Infinity, since: T, reason: 'fraud' });
    assert.deepEqual(blocks.find((b) => b.key === 'bot-1499'), { key: 'bot-1499', kind: 'block', until: T + 1499 + 3_600_000, since: T + 1499, reason: 'automatic: refused at 1/1h' });
  });

  test('past maxKeys an operator\'s new block is refused with an error naming the bound; none is lifted', async () => {
    const t0 = Date.now();
    const lim = limiter({ rules: '10/s', store: memoryStore({ maxKeys: 1000 }), clock: { now: () => t0 } });
    await lim.block('first');
    for (let i = 1; i < 1000; i++) await lim.block(`k${i}`, { for: '1h' });
    await assert.rejects(lim.block('one-too-many', { for: '1h' }), (e: unknown) => {
      assert.ok(e instanceof RatekeeperError);
      assert.equal(e.code, 'ERR_ARGUMENT');
      assert.match(e.message, /holds 1000 blocks and exemptions set by an operator for this limiter \(memoryStore maxKeys\), all in force: lift one \(unblock, unexempt\) or raise maxKeys; none was lifted to make room for "one-too-many"/);
      return true;
    });
    await assert.rejects(lim.exempt('another'), /all in force/);
    assert.equal((await lim.check('first')).reason, 'blocked', 'the oldest is still in force');
    assert.equal((await lim.check('one-too-many')).reason, 'allowed');
    // replacing one that is held needs no room; lifting one makes room
    await lim.block('k5', { for: '2h', reason: 'longer' });
    await lim.unblock('k6');
    await lim.block('one-too-many', { for: '1h' });
    assert.equal((await lim.check('one-too-many')).reason, 'blocked');
  });
});

describe('autoBlock: the limiter option', () => {
  test('as rate-limiter-flexible: the first refused request blocks for blockDuration; msBeforeNext and retryAfter agree', async () => {
    const require = createRequire(import.meta.url);
    const { RateLimiterMemory } = require('rate-limiter-flexible') as { RateLimiterMemory: new (o: object) => { consume(k: string): Promise<{ msBeforeNext: number; remainingPoints: number }> } };
    const rlf = new RateLimiterMemory({ points: 3, duration: 10, blockDuration: 60 });
    const lim = limiter({ rules: '3/10s', autoBlock: { for: 60_000 } });
    for (let i = 0; i < 3; i++) {
      await rlf.consume('k');
      assert.equal((await lim.check('k', { now: T + i })).allowed, true);
    }
    const refused = await rlf.consume('k').then(() => assert.fail('admitted'), (r: { msBeforeNext: number }) => r);
    const d = await lim.check('k', { now: T + 3 });
    assert.equal(refused.msBeforeNext, 60_000, 'rate-limiter-flexible: the refusal that crosses the limit reports the block');
    assert.equal(d.reason, 'limited');
    assert.equal(d.retryAfter, 60_000);
    // later requests: refused until the block's end, whatever the window (rate-limiter-flexible keeps the key 60 s)
    const again = await rlf.consume('k').then(() => assert.fail('admitted'), (r: { msBeforeNext: number }) => r);
    assert.ok(again.msBeforeNext > 59_000 && again.msBeforeNext <= 60_000, String(again.msBeforeNext));
    const d2 = await lim.check('k', { now: T + 10_003 });
    assert.equal(d2.reason, 'blocked');
    assert.equal(d2.retryAfter, 50_000);
    assert.equal(d2.blockReason, 'automatic: refused at 3/10s');
    assert.equal((await lim.check('k', { now: T + 60_002 })).reason, 'blocked');
    assert.equal((await lim.check('k', { now: T + 60_003 })).allowed, true);
    // listed for the operators, with its reason; inspect shows it too
    await lim.check('k', { now: T + 60_004 });
    await lim.check('k', { now: T + 60_005 });
    await lim.check('k', { now: T + 60_006 });
    const ins = await lim.inspect('k', { now: T + 60_007 });
    assert.deepEqual(ins.override, { key: 'k', kind: 'block', until: T + 60_006 + 60_000, since: T + 60_006, reason: 'automatic: refused at 3/10s' });
  });

  test('bad options are errors naming the field; a look (cost 0) never starts a block', async () => {
    assert.throws(() => limiter({ rules: '1/s', autoBlock: { for: 0 } }), /limiter\.autoBlock\.for must be a finite duration > 0, got 0/);
    assert.throws(() => limiter({ rules: '1/s', autoBlock: {} as never }), /limiter\.autoBlock\.for is required/);
    assert.throws(() => limiter({ rules: '1/s', autoBlock: { fro: '1m' } as never }), /limiter\.autoBlock\.fro is not an option of limiter\.autoBlock \(did you mean `for`\?\)/);
    assert.throws(() => limiter({ rules: '1/s', autoBlock: '1m' as never }), /limiter\.autoBlock takes an options object like \{ for: … \}, got "1m"/);
    assert.throws(() => limiter({ rules: '1/s', autoBlock: { for: '1m', reason: 5 } as never }), /limiter\.autoBlock\.reason must be a string, got 5/);
    // EARRRL decides on the estimate before the request: after one request of cost 100, even a look is refused
    const lim = limiter({ rules: [rules.earrrl({ limit: 1, per: 10_000, halfLife: 5_000 })], autoBlock: { for: '1m' } });
    assert.equal((await lim.check('k', { now: T, cost: 100 })).allowed, true);
    const look = await lim.peek('k', { now: T + 1 });
    assert.equal(look.reason, 'limited');
    assert.deepEqual(await lim.blocks({ now: T + 1 }), [], 'a look started no block');
    const d = await lim.check('k', { now: T + 2 });
    assert.equal(d.reason, 'limited');
    assert.equal(d.retryAfter, Math.max(60_000, d.rules[0].retryAfter));
    assert.equal((await lim.blocks({ now: T + 2 })).length, 1);
  });
});
