/**
 * test/core/options — a misspelled option is an error naming it, its value and the closest real name, for every
 * options object of the core, the limiter, the memory store, the denial cache and the simulator; the right
 * spelling still does what it says. (The HTTP adapters': test/http/options; the Redis store's: test/redis/options.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { limiter, rules, memoryStore, parseRules, parseDuration, Policy, RatekeeperError } from '../../src/index.js';
import { checkOptions, checkOptionsObject, closest, didYouMean, unknownOption } from '../../src/core/options.js';
import { abuser, parseTraceCsv, periodic, replay, scenario, simulate, figureSpec, writeSimulation, fromScenario } from '../../src/sim/index.js';

/** typo — asserts that `fn` throws (or rejects with) a RatekeeperError of `code` whose message is exactly `message`. */
function typo(fn: () => unknown, message: string, code: 'ERR_CONFIG' | 'ERR_ARGUMENT' = 'ERR_CONFIG'): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof RatekeeperError, `a RatekeeperError, got ${String(e)}`);
    assert.equal(e.message, `ratekeeper: ${message}`);
    assert.equal(e.code, code);
    return true;
  });
}

async function typoAsync(p: Promise<unknown>, message: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof RatekeeperError, `a RatekeeperError, got ${String(e)}`);
    assert.equal(e.message, `ratekeeper: ${message}`);
    assert.equal(e.code, 'ERR_ARGUMENT');
    return true;
  });
}

describe('core/options', () => {
  it('closest: the nearest name within a third of its length (at most 3 edits), case-insensitive, swaps count once', () => {
    const known = ['dryRun', 'rules', 'store', 'clock', 'denialCache'];
    assert.equal(closest('dryrun', known), 'dryRun');
    assert.equal(closest('dyrRun', known), 'dryRun', 'a swap of neighbours is one edit');
    assert.equal(closest('rule', known), 'rules');
    assert.equal(closest('denialcahce', known), 'denialCache');
    assert.equal(closest('xyz', known), undefined, 'nothing near');
    assert.equal(closest('clck', ['clock']), 'clock');
    assert.equal(closest('ab', ['cd']), undefined, 'two edits in a two-letter name is not a typo');
    assert.equal(closest('x', []), undefined);
  });

  it('didYouMean and unknownOption', () => {
    assert.equal(didYouMean('cots', ['cost', 'now']), ' (did you mean `cost`?)');
    assert.equal(didYouMean('banana', ['cost', 'now']), '');
    const known = new Set(['a', 'b']);
    assert.equal(unknownOption({ a: 1, b: 2 }, known), undefined);
    assert.equal(unknownOption({ a: 1, c: 2 }, known), 'c');
    assert.equal(unknownOption(Object.create({ inherited: 1 }) as object, known), undefined, 'own names only');
  });

  it('checkOptions names where, the option, the suggestion and the value; checkOptionsObject refuses non-objects', () => {
    typo(() => checkOptions({ dryrun: true }, new Set(['dryRun']), 'limiter'), 'limiter.dryrun is not an option of limiter (did you mean `dryRun`?), got true');
    typo(() => checkOptions({ zzz: [1] }, new Set(['dryRun']), 'x', 'ERR_ARGUMENT'), 'x.zzz is not an option of x, got [1]', 'ERR_ARGUMENT');
    assert.doesNotThrow(() => checkOptions({ dryRun: true }, new Set(['dryRun']), 'limiter'));
    typo(() => checkOptionsObject(5, new Set(['for']), 'block'), 'block takes an options object like { for: … }, got 5');
    typo(() => checkOptionsObject(null, new Set(['for']), 'block'), 'block takes an options object like { for: … }, got null');
    typo(() => checkOptionsObject([], new Set(['for']), 'block'), 'block takes an options object like { for: … }, got []');
  });
});

describe('every options object refuses a misspelled name', () => {
  it('limiter: dryrun → dryRun (and dryRun still works)', () => {
    typo(() => limiter({ rules: '1/s', dryrun: true } as never), 'limiter.dryrun is not an option of limiter (did you mean `dryRun`?), got true');
    typo(() => limiter({ rule: '1/s' } as never), 'limiter.rule is not an option of limiter (did you mean `rules`?), got "1/s"');
    const lim = limiter({ rules: '1/s', dryRun: true });
    lim.checkSync('k', { now: 0 });
    const d = lim.checkSync('k', { now: 1 });
    assert.deepEqual([d.allowed, d.reason], [true, 'dry-run']);
  });

  it('checkSync / check: cots → cost (a typo is not a cost of 1), and cost still charges', async () => {
    const lim = limiter({ rules: [rules.fixedWindow({ limit: 10, per: '1h' })] });
    typo(() => lim.checkSync('k', { cots: 5 } as never), 'checkSync.cots is not an option of checkSync (did you mean `cost`?), got 5', 'ERR_ARGUMENT');
    typo(() => lim.checkSync('k', { cost: 1, nwo: 5 } as never), 'checkSync.nwo is not an option of checkSync (did you mean `now`?), got 5', 'ERR_ARGUMENT');
    typo(() => lim.checkSync('k', 5 as never), 'checkSync takes an options object like { cost: … }, got 5', 'ERR_ARGUMENT');
    await typoAsync(lim.check('k', { cots: 5 } as never), 'check.cots is not an option of check (did you mean `cost`?), got 5');
    await typoAsync(lim.check('k', { Cost: 5 } as never), 'check.Cost is not an option of check (did you mean `cost`?), got 5');
    assert.equal(lim.checkSync('k', { now: 0 }).remaining, 10 - 1, 'no misspelled call charged anything');
    assert.equal(lim.checkSync('k', { cost: 5, now: 0 }).remaining, 10 - 6);
    assert.equal((await lim.check('k', { cost: 2, now: 0 })).remaining, 10 - 8);
    // an options object whose prototype has enumerable names is read by its own names
    const proto = Object.create({ inherited: true }) as { cost?: number; now?: number };
    proto.cost = 1;
    proto.now = 0;
    assert.equal(lim.checkSync('k', proto).remaining, 10 - 9);
  });

  it('peek: nwo → now', async () => {
    const lim = limiter({ rules: '5/s' });
    await typoAsync(lim.peek('k', { nwo: 1 } as never), 'peek.nwo is not an option of peek (did you mean `now`?), got 1');
    assert.equal((await lim.peek('k', { now: 1 })).remaining, 5);
  });

  it('block: fro → for (a typo is not a permanent block), and for still bounds the block', async () => {
    let now = 0;
    const lim = limiter({ rules: '5/s', clock: { now: () => now } });
    await typoAsync(lim.block('k', { fro: '1h' } as never), 'block.fro is not an option of block (did you mean `for`?), got "1h"');
    await typoAsync(lim.block('k', { for: '1h', reasn: 'x' } as never), 'block.reasn is not an option of block (did you mean `reason`?), got "x"');
    assert.equal(lim.checkSync('k').reason, 'allowed', 'the misspelled block blocked nothing');
    await lim.block('k', { for: '1h', reason: 'abuse' });
    const d = lim.checkSync('k');
    assert.deepEqual([d.reason, d.retryAfter, d.blockReason], ['blocked', 3_600_000, 'abuse']);
    now = 3_600_000;
    assert.equal(lim.checkSync('k').reason, 'allowed');
  });

  it('exempt: fro → for', async () => {
    let now = 0;
    const lim = limiter({ rules: '1/h', clock: { now: () => now } });
    await typoAsync(lim.exempt('k', { fro: '1m' } as never), 'exempt.fro is not an option of exempt (did you mean `for`?), got "1m"');
    await lim.exempt('k', { for: '1m' });
    assert.equal(lim.checkSync('k').reason, 'exempt');
    now = 60_000;
    assert.equal(lim.checkSync('k').reason, 'allowed');
  });

  it('memoryStore: maxkeys → maxKeys', () => {
    typo(() => memoryStore({ maxkeys: 2 } as never), 'memoryStore.maxkeys is not an option of memoryStore (did you mean `maxKeys`?), got 2');
    typo(() => memoryStore(7 as never), 'memoryStore takes an options object like { maxKeys: 100_000 }, got 7');
    const store = memoryStore({ maxKeys: 1 });
    const lim = limiter({ rules: '1/h', store });
    lim.checkSync('a', { now: 0 });
    lim.checkSync('b', { now: 0 });
    assert.equal(lim.checkSync('a', { now: 0 }).allowed, true, 'maxKeys 1: a was forgotten');
  });

  it('denialCache options: maxkeys → maxKeys, checked even on a policy that does not use the cache', () => {
    typo(() => limiter({ rules: '1/s', denialCache: { maxkeys: 5 } as never }), 'denialCache.maxkeys is not an option of denialCache (did you mean `maxKeys`?), got 5');
    typo(() => limiter({ rules: [rules.earrrl({ limit: 1, per: '1s', halfLife: '1s' })], denialCache: { maxkeys: 5 } as never }), 'denialCache.maxkeys is not an option of denialCache (did you mean `maxKeys`?), got 5');
    assert.equal(limiter({ rules: '1/s', denialCache: { maxKeys: 5 } }).denialCache?.maxKeys, 5);
  });

  it('rule factories: brust → burst, halflife → halfLife', () => {
    typo(() => rules.tokenBucket({ limit: 5, per: '1s', brust: 3 } as never), 'tokenBucket.brust is not an option of tokenBucket (did you mean `burst`?), got 3');
    typo(() => rules.earrrl({ limit: 5, per: '1s', halflife: '1s' } as never), 'earrrl.halflife is not an option of earrrl (did you mean `halfLife`?), got "1s"');
    typo(() => rules.gcra({ limit: 5, per: '1s', halfLife: '1s' } as never), 'gcra.halfLife is not an option of gcra (only earrrl has a half-life), got "1s"');
    assert.equal(rules.tokenBucket({ limit: 5, per: '1s', burst: 3 }).burst, 3);
  });

  it('parseRules: algoritm → algorithm', () => {
    typo(() => parseRules('1/s', { algoritm: 'gcra' } as never), 'parseRules.algoritm is not an option of parseRules (did you mean `algorithm`?), got "gcra"');
    assert.equal(parseRules('1/s', { algorithm: 'gcra' })[0].algorithm, 'gcra');
  });

  it('Policy: dryrun → dryRun', () => {
    typo(() => new Policy({ rules: parseRules('1/s'), dryrun: true } as never), 'Policy.dryrun is not an option of Policy (did you mean `dryRun`?), got true');
    assert.equal(new Policy({ rules: parseRules('1/s'), dryRun: true }).dryRun, true);
  });

  it('simulator: replay, its limiters, periodic, abuser, parseTraceCsv, scenario, figureSpec, simulate, writeSimulation', async () => {
    const trace = periodic({ key: 'a', rate: 1, start: 0, end: 3000 }).trace;
    const limiters = [{ name: 'l', rules: '1/s' }];
    const arg = 'ERR_ARGUMENT' as const;
    typo(() => replay(trace, { limiters, sampleevery: 10 } as never), 'replay.sampleevery is not an option of replay (did you mean `sampleEvery`?), got 10', arg);
    typo(() => replay(trace, { limiters: [{ name: 'l', rules: '1/s', dryrun: true }] } as never), 'replay.limiters[].dryrun is not an option of replay.limiters[] (did you mean `dryRun`?), got true', arg);
    typo(() => periodic({ key: 'a', rate: 1, start: 0, end: 1, cots: 2 } as never), 'periodic.cots is not an option of periodic (did you mean `cost`?), got 2', arg);
    typo(() => abuser({ key: 'a', limit: 1, factor: 2, start: 0, obeyfrom: 1, end: 2 } as never), 'abuser.obeyfrom is not an option of abuser (did you mean `obeyFrom`?), got 1', arg);
    typo(() => parseTraceCsv('t\n1\n', { timeunit: 'ms' } as never), 'parseTraceCsv.timeunit is not an option of parseTraceCsv (did you mean `timeUnit`?), got "ms"', arg);
    typo(() => scenario('abuser', { halflife: 1000 } as never), 'scenario.halflife is not an option of scenario (did you mean `halfLife`?), got 1000', arg);
    const result = replay(trace, { limiters, sampleEvery: 0 });
    assert.deepEqual(result.requests.map((r) => r.allowed), [true, true, true]);
    typo(() => figureSpec(result, { title: 't', figures: ['cumulative'], orgin: 5 } as never), 'figureSpec.orgin is not an option of figureSpec (did you mean `origin`?), got 5', arg);
    const input = fromScenario(scenario('abuser', { halfLife: 1000 }));
    typo(() => simulate({ ...input, showlimit: false } as never), 'simulate.showlimit is not an option of simulate (did you mean `showLimit`?), got false', arg);
    const sim = simulate(input);
    await typoAsync(writeSimulation(sim, '/nonexistent', { plto: false } as never), 'writeSimulation.plto is not an option of writeSimulation (did you mean `plot`?), got false');
  });
});

describe('ambiguous and calendar time units are errors naming the value', () => {
  it("'10/M' is refused (minute or month?), '10/m', '10/min', '10/MIN' are ten a minute", () => {
    assert.throws(() => parseRules('10/M'), /^RatekeeperError: ratekeeper: ambiguous time unit "M" \(a capital M reads as month or mega\): write 'm' or 'min' for minutes in limit "10\/M"/);
    assert.throws(() => parseRules('10/MS'), /ambiguous time unit "MS" .*write 'ms' for milliseconds in limit "10\/MS"/);
    assert.throws(() => parseRules('10/Ms'), /ambiguous time unit "Ms"/);
    assert.throws(() => parseRules('10/mo'), /time unit "mo" has no fixed length: write days or weeks \('30d', '52w'\) in limit "10\/mo"/);
    assert.throws(() => parseRules('10/year'), /time unit "year" has no fixed length/);
    for (const text of ['10/m', '10/min', '10/MIN', '10/Min', '10/minute', '10 per Minute']) assert.equal(parseRules(text)[0].per, 60_000, text);
    for (const text of ['10/ms', '10/mS']) assert.equal(parseRules(text)[0].per, 1, text);
    for (const text of ['10/S', '10/H', '10/D', '10/W']) assert.ok(parseRules(text)[0].per >= 1000, text);
  });

  it("per: '1M' and halfLife: '1Ms' are refused the same way", () => {
    assert.throws(() => rules.gcra({ limit: 1, per: '1M' }), /gcra\.per must be a duration like .*, got "1M": ambiguous time unit "M"/);
    assert.throws(() => rules.earrrl({ limit: 1, per: '1s', halfLife: '5Ms' }), /earrrl\.halfLife must be a duration like .*, got "5Ms": ambiguous time unit "Ms"/);
    assert.throws(() => parseDuration('1 month', 'x'), /x must be a duration like .*, got "1 month": time unit "month" has no fixed length/);
    assert.throws(() => parseDuration('1 fortnight', 'x'), /x must be a duration like .*, got "1 fortnight"$/);
    assert.equal(parseDuration('1m', 'x'), 60_000);
    assert.equal(parseDuration('2 Min', 'x'), 120_000);
  });
});
