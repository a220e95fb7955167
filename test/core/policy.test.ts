/** Policies: several rules all-or-nothing, accounting, dry-run, blocks and exemptions, reset, the binding rule. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules, parseRules } from '../../src/index.js';

describe('policy', () => {
  it('is all-or-nothing: a refusal by one rule consumes nothing from the others', () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1m' }), rules.tokenBucket({ limit: 1, per: '1s', burst: 2 })] });
    assert.equal(lim.checkSync('k', { now: 0 }).allowed, true);
    assert.equal(lim.checkSync('k', { now: 0 }).allowed, true);
    for (let i = 0; i < 5; i++) {
      const d = lim.checkSync('k', { now: 0 });
      assert.equal(d.allowed, false);
      assert.deepEqual(d.rules.map((r) => r.allowed), [true, false]);
      assert.equal(d.rules[0].remaining, 8, 'the window rule was not charged for the refusal');
    }
  });

  it('a strict rule is charged even when another rule refuses', () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1m', accounting: 'strict', name: 'win' }), rules.tokenBucket({ limit: 1, per: '1s', burst: 1 })] });
    lim.checkSync('k', { now: 0 });
    const d = lim.checkSync('k', { now: 0 });
    assert.equal(d.allowed, false);
    assert.equal(d.rules[0].remaining, 8, 'strict window counted the refused attempt');
  });

  it('the binding rule is the longest wait when refused and the least remaining when admitted', () => {
    const lim = limiter({ rules: [rules.slidingLog({ limit: 3, per: '1s' }), rules.slidingLog({ limit: 5, per: '1m' })] });
    let d = lim.checkSync('k', { now: 0 });
    assert.equal(d.limit, 3);
    assert.equal(d.remaining, 2);
    lim.checkSync('k', { now: 100 });
    lim.checkSync('k', { now: 200 });
    d = lim.checkSync('k', { now: 300 });
    assert.equal(d.allowed, false);
    assert.equal(d.limit, 3);
    assert.equal(d.retryAfter, 700);
    lim.checkSync('k', { now: 1000 });
    lim.checkSync('k', { now: 1100 });
    d = lim.checkSync('k', { now: 1200 });
    assert.equal(d.allowed, false);
    assert.equal(d.limit, 5, '5/min binds: it waits until t = 60 s');
    assert.equal(d.retryAfter, 60_000 - 1200);
  });

  it('rate is the highest measured rate; delay the leaky bucket\'s', () => {
    const lim = limiter({ rules: [rules.earrrl({ limit: 10, per: '1s', halfLife: '1s' }), rules.exponential({ limit: 10, per: '1s', name: 'exp' }), rules.leakyBucket({ limit: 10, per: '1s', name: 'leaky' })] });
    lim.checkSync('k', { now: 0 });
    const d = lim.checkSync('k', { now: 0 });
    assert.ok(d.rate !== undefined && Math.abs(d.rate - Math.max(d.rules[0].rate!, d.rules[1].rate!)) < 1e-12);
    assert.ok(Math.abs(d.rules[1].rate! - 2) < 1e-6, 'exponential: two fast requests ≈ 2 per period');
    assert.equal(d.delay, 100);
    assert.equal(d.rules[0].delay, undefined);
  });

  it('dry-run changes state as if enforced, always allows, and says what enforcement would have said', () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1s' })], dryRun: true });
    const a = lim.checkSync('k', { now: 0 });
    assert.deepEqual([a.allowed, a.reason], [true, 'allowed']);
    const b = lim.checkSync('k', { now: 10 });
    assert.deepEqual([b.allowed, b.reason, b.retryAfter, b.rules[0].allowed], [true, 'dry-run', 990, false]);
  });

  it('blocks: with a duration, without one (Infinity), with a reason; charge nothing; unblock lifts', async () => {
    let now = 0;
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 5, per: '1m' })], clock: { now: () => now } });
    await lim.block('k', { for: '10s', reason: 'scraping' });
    let d = await lim.check('k');
    assert.deepEqual([d.allowed, d.reason, d.retryAfter, d.blockReason], [false, 'blocked', 10_000, 'scraping']);
    assert.equal(d.rules[0].remaining, 5, 'a blocked request charges no rule');
    now = 10_000;
    d = await lim.check('k');
    assert.deepEqual([d.allowed, d.reason, d.remaining], [true, 'allowed', 4]);
    await lim.block('k');
    d = await lim.check('k');
    assert.equal(d.retryAfter, Infinity);
    now = 1e12;
    assert.equal((await lim.check('k')).reason, 'blocked', 'a block without `for` lasts');
    await lim.unblock('k');
    assert.equal((await lim.check('k')).allowed, true);
  });

  it('a block\'s retryAfter includes the wait of a rule that would still refuse when it ends (exact)', async () => {
    let now = 0;
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '10s' })], clock: { now: () => now } });
    await lim.check('k');
    await lim.block('k', { for: '1s' });
    const d = await lim.check('k');
    assert.deepEqual([d.reason, d.retryAfter, d.resetAfter, d.rules[0].allowed], ['blocked', 10_000, 1000, false]);
    now = 9_999;
    assert.equal((await lim.check('k')).reason, 'limited', 'the block is over, the window is not');
    now = 10_000;
    assert.equal((await lim.check('k')).allowed, true);
  });

  it('exemptions charge nothing; the later of block and exempt wins; reset keeps both', async () => {
    let now = 0;
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 1, per: '1m' })], clock: { now: () => now } });
    await lim.exempt('k', { for: '1m' });
    for (let i = 0; i < 3; i++) assert.equal((await lim.check('k')).reason, 'exempt');
    await lim.block('k');
    assert.equal((await lim.check('k')).reason, 'blocked', 'block after exempt wins');
    await lim.exempt('k');
    assert.equal((await lim.check('k')).reason, 'exempt', 'exempt after block wins');
    await lim.reset('k');
    assert.equal((await lim.check('k')).reason, 'exempt', 'reset clears rule state, not exemptions');
    await lim.unblock('k');
    assert.equal((await lim.check('k')).reason, 'exempt', 'unblock does not lift an exemption');
    await lim.unexempt('k');
    const d = await lim.check('k');
    assert.deepEqual([d.reason, d.remaining], ['allowed', 0], 'the exempt requests were never charged');
    now = 1;
    assert.equal((await lim.check('k')).allowed, false);
    await lim.reset('k');
    assert.equal((await lim.check('k')).allowed, true, 'reset forgets rule state');
  });

  it('dry-run admits a blocked client but says so', async () => {
    const lim = limiter({ rules: [rules.gcra({ limit: 1, per: '1s' })], dryRun: true });
    await lim.block('k', { reason: 'x' });
    const d = await lim.check('k');
    assert.deepEqual([d.allowed, d.reason, d.blockReason], [true, 'dry-run', 'x']);
  });

  it('peek charges nothing and reports the state', async () => {
    const lim = limiter({ rules: [rules.slidingLog({ limit: 2, per: '1s' })] });
    await lim.check('k', { now: 0 });
    const p = await lim.peek('k', { now: 1 });
    assert.deepEqual([p.allowed, p.remaining], [true, 1]);
    assert.equal((await lim.check('k', { now: 2 })).remaining, 0);
    assert.equal((await lim.peek('new', { now: 2 })).remaining, 2);
  });

  it('accepts a rule string', () => {
    const lim = limiter({ rules: '1/s; 20/min' });
    assert.deepEqual(lim.policy.rules.map((r) => [r.algorithm, r.limit, r.per, r.name]), [['slidingLog', 1, 1000, '1/1s'], ['slidingLog', 20, 60_000, '20/1m']]);
  });
});

describe('parseRules', () => {
  it('parses the forms people write', () => {
    const r = parseRules('1/s; 20/min, 200/h ;800/day; 10 per second; 100/5m; 3/500ms; 2.5/1.5s');
    assert.deepEqual(r.map((x) => [x.limit, x.per]), [[1, 1000], [20, 60_000], [200, 3_600_000], [800, 86_400_000], [10, 1000], [100, 300_000], [3, 500], [2.5, 1500]]);
    assert.ok(r.every((x) => x.algorithm === 'slidingLog'));
    const g = parseRules('10/s', { algorithm: 'earrrl', halfLife: '5s' });
    assert.deepEqual([g[0].algorithm, g[0].halfLife, g[0].accounting], ['earrrl', 5000, 'strict']);
  });

  it('says what is wrong with a bad string', () => {
    assert.throws(() => parseRules('20/fortnight'), /unknown time unit "fortnight" in limit "20\/fortnight"/);
    assert.throws(() => parseRules('twenty per minute'), /cannot parse limit "twenty per minute"/);
    assert.throws(() => parseRules(' ; '), /found no limit/);
    assert.throws(() => parseRules('0/s'), /slidingLog\.limit must be a finite number > 0, got 0/);
    assert.throws(() => parseRules('10/s', { algorithm: 'earrrl' }), /earrrl\.halfLife is required/);
    assert.throws(() => parseRules('10/s', { algorithm: 'bogus' as never }), /algorithm must be one of .*got "bogus"/);
  });
});

describe('validation', () => {
  const bad: [string, () => unknown, RegExp][] = [
    ['limit 0', () => rules.gcra({ limit: 0, per: '1s' }), /ratekeeper: gcra\.limit must be a finite number > 0, got 0/],
    ['limit NaN', () => rules.tokenBucket({ limit: NaN, per: '1s' }), /tokenBucket\.limit must be a finite number > 0, got NaN/],
    ['limit string', () => rules.fixedWindow({ limit: '5' as never, per: '1s' }), /fixedWindow\.limit .* got "5"/],
    ['per missing', () => rules.slidingLog({ limit: 5 } as never), /slidingLog\.per must be a duration .* got undefined/],
    ['per bad unit', () => rules.slidingWindow({ limit: 5, per: '1 fortnight' }), /slidingWindow\.per must be a duration .* got "1 fortnight"/],
    ['per negative', () => rules.slidingWindow({ limit: 5, per: -5 }), /slidingWindow\.per must be a finite duration > 0, got -5/],
    ['burst 0', () => rules.tokenBucket({ limit: 5, per: '1s', burst: 0 }), /ratekeeper: tokenBucket\.burst must be a finite number >= 1, got 0/],
    ['burst on earrrl', () => rules.earrrl({ limit: 5, per: '1s', halfLife: '1s', burst: 3 } as never), /earrrl\.burst is not an option of earrrl/],
    ['halfLife missing', () => rules.earrrl({ limit: 5, per: '1s' } as never), /earrrl\.halfLife is required/],
    ['halfLife 0', () => rules.earrrl({ limit: 5, per: '1s', halfLife: 0 }), /earrrl\.halfLife must be a finite duration > 0, got 0/],
    ['accounting', () => rules.exponential({ limit: 5, per: '1s', accounting: 'lenient' as never }), /exponential\.accounting must be 'leaky' or 'strict', got "lenient"/],
    ['name', () => rules.gcra({ limit: 5, per: '1s', name: '' }), /gcra\.name must be a non-empty string/],
    ['typo', () => rules.gcra({ limit: 5, per: '1s', brust: 3 } as never), /gcra\.brust is not an option of gcra \(did you mean `burst`\?\), got 3/],
    ['no rules', () => limiter({ rules: [] }), /rules must be a non-empty array/],
    ['hand-made rule', () => limiter({ rules: [{ algorithm: 'gcra', limit: 1, per: 1000 } as never] }), /rules\[0\] must be made by rules/],
    ['duplicate names', () => limiter({ rules: [rules.gcra({ limit: 5, per: '1s' }), rules.tokenBucket({ limit: 5, per: '1s' })] }), /rules\[1\]\.name "5\/1s" is used by another rule/],
    ['mixed log accounting', () => limiter({ rules: [rules.slidingLog({ limit: 5, per: '1s' }), rules.slidingLog({ limit: 50, per: '1m', accounting: 'strict' })] }), /share one accounting/],
    ['dryRun', () => limiter({ rules: '1/s', dryRun: 'yes' as never }), /dryRun must be a boolean, got "yes"/],
    ['clock', () => limiter({ rules: '1/s', clock: {} as never }), /clock must be an object with a now\(\) method/],
    ['store', () => limiter({ rules: '1/s', store: {} as never }), /store must be a ratekeeper store/],
  ];
  for (const [what, fn, re] of bad) it(`rejects ${what} at construction`, () => assert.throws(fn, re));
  const outOfRange: [string, () => unknown, RegExp][] = [
    ['a period of 1e15 days', () => rules.fixedWindow({ limit: 5, per: '1000000000000000d' }), /fixedWindow\.per must be at most 1000000000000 ms \(about 31 years\), got "1000000000000000d"/],
    ['a period over 1e12 ms', () => rules.slidingLog({ limit: 5, per: 1e12 + 1 }), /slidingLog\.per must be at most 1000000000000 ms .*got 1000000000001/],
    ['a half-life over 1e12 ms', () => rules.earrrl({ limit: 5, per: '1s', halfLife: 2e12 }), /earrrl\.halfLife must be at most 1000000000000 ms .*got 2000000000000/],
    ['a limit over 1e15', () => rules.gcra({ limit: 2e15, per: '1s' }), /gcra\.limit must be from 0\.000001 to 1000000000000000, got 2000000000000000/],
    ['a limit under 1e-6', () => rules.tokenBucket({ limit: 1e-7, per: '1s' }), /tokenBucket\.limit must be from 0\.000001 to 1000000000000000, got 1e-7/],
    ['a burst over 1e15', () => rules.tokenBucket({ limit: 5, per: '1s', burst: 1e16 }), /tokenBucket\.burst must be at most 1000000000000000, got 10000000000000000/],
  ];
  for (const [what, fn, re] of outOfRange) it(`rejects ${what} (the documented range)`, () => assert.throws(fn, re));

  it('accepts the bounds of the range', () => {
    for (const a of ['fixedWindow', 'slidingWindow', 'slidingLog', 'tokenBucket', 'leakyBucket', 'gcra', 'exponential'] as const) {
      const lim = limiter({ rules: [rules[a]({ limit: 1e15, per: 1e12 })] });
      assert.equal(lim.checkSync('k', { now: 1e15, cost: 1e15 }).allowed, true, a);
      assert.equal(limiter({ rules: [rules[a]({ limit: 1e-6, per: 1e12 })] }).checkSync('k', { now: 0, cost: 0 }).allowed, true, a);
    }
    assert.equal(limiter({ rules: [rules.earrrl({ limit: 1e15, per: 1e12, halfLife: 1e12 })] }).checkSync('k', { now: 0, cost: 1e15 }).allowed, true);
  });

  it('rejects a cost over 1e15 and a now outside 0 … 1e15, naming the value, on every call', async () => {
    const lim = limiter({ rules: [rules.tokenBucket({ limit: 10, per: '1s', accounting: 'strict' })] });
    assert.throws(() => lim.checkSync('k', { cost: 1e16 }), /ratekeeper: cost must be at most 1000000000000000, got 10000000000000000/);
    await assert.rejects(lim.check('k', { cost: 1e16 }), (e: Error & { code?: string }) => e.code === 'ERR_ARGUMENT' && /got 10000000000000000/.test(e.message));
    assert.throws(() => lim.checkSync('k', { now: -1e300 }), /now must be from 0 to 1000000000000000 ms since the epoch, got -1e\+300/);
    assert.throws(() => lim.checkSync('k', { now: -1 }), /got -1/);
    assert.throws(() => lim.checkSync('k', { now: 2e15 }), /got 2000000000000000/);
    await assert.rejects(lim.peek('k', { now: -1e300 }), /now must be from 0/);
    const d = lim.checkSync('k', { now: 0 });
    assert.deepEqual([d.allowed, d.remaining], [true, 9], 'none of the misuses charged anything');
  });

  it('rejects bad keys, costs and times at the call, without touching state', async () => {
    const lim = limiter({ rules: [rules.gcra({ limit: 1, per: '1s' })] });
    for (const key of ['', 42, null, undefined, {}, 'x'.repeat(4097)]) {
      assert.throws(() => lim.checkSync(key as never), /ratekeeper: key must be a non-empty string/);
      await assert.rejects(lim.check(key as never), /key must be a non-empty string/);
    }
    for (const cost of [-1, NaN, Infinity, -Infinity, '1', null]) {
      assert.throws(() => lim.checkSync('k', { cost: cost as never }), /ratekeeper: cost must be a finite number >= 0, got/);
      await assert.rejects(lim.check('k', { cost: cost as never }), (e: Error & { code?: string }) => e.code === 'ERR_ARGUMENT');
    }
    assert.throws(() => lim.checkSync('k', { now: NaN }), /now must be a finite number of ms, got NaN/);
    await assert.rejects(lim.block('k', { for: 'soon' }), /block\.for must be a duration/);
    assert.equal(lim.checkSync('k').allowed, true, 'none of the misuses charged anything');
  });
});
