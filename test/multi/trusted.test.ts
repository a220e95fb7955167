/**
 * checkAllTrusted / checkAllSyncTrusted (the limiter service's way into the all-or-nothing check, which skips the
 * item checks for items it built itself) against checkAllSync / checkAll, the checked path: on twin memory stores fed
 * the same random compound requests — several algorithms and rules, dry-run, a denial cache, an observer, blocks and
 * exemptions, duplicate (limiter, key) items, costs 0 to 3, a cost left out or given as undefined, other fields on an
 * item as the service's plan items have — every result and every client's state after it are the same. Bad items
 * are the checked path's business: the trusted one is only given good ones, and what it takes on trust the checked
 * one refuses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { limiter, checkAll, checkAllSync, type Limiter } from '../../src/index.js';
import { checkAllSyncTrusted, checkAllTrusted, type CheckAllItem } from '../../src/multi.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { ALGORITHMS, rule } from './table.js';
import { T0 } from '../conformance/scenarios.js';

/** Of — what an arbitrary generates. */
type Of<A> = A extends fc.Arbitrary<infer T> ? T : never;

const limiterArb = fc.record({
  algorithms: fc.array(fc.constantFrom(...ALGORITHMS), { minLength: 1, maxLength: 2 }),
  limit: fc.integer({ min: 1, max: 4 }),
  dryRun: fc.boolean(),
  denialCache: fc.boolean(),
  observe: fc.boolean(),
});
const stepArb = fc.record({
  gap: fc.integer({ min: 0, max: 2_000 }),
  items: fc.array(fc.record({ lim: fc.nat(), key: fc.constantFrom('a', 'b', 'c'), cost: fc.option(fc.constantFrom(0, 0.5, 1, 2, 3), { nil: undefined }), extra: fc.boolean() }), { minLength: 1, maxLength: 4 }),
  override: fc.option(fc.record({ lim: fc.nat(), key: fc.constantFrom('a', 'b'), kind: fc.constantFrom('block', 'exempt') }), { nil: undefined }),
});

/** clock — the fake time of both twins (blocks and exemptions end by it; checks are given it as `now`). */
const clock = { t: T0, now: (): number => clock.t };

/** twins — the same limiters on two memory stores. */
function twins(specs: Of<typeof limiterArb>[]): [Limiter[], Limiter[]] {
  const make = (): Limiter[] => {
    const store = new MemoryStore();
    return specs.map((s) => limiter({
      rules: s.algorithms.map((a, i) => rule(a, { limit: s.limit + i, name: `r${i}` })), store, dryRun: s.dryRun,
      denialCache: s.denialCache, observe: s.observe, clock,
    }));
  };
  return [make(), make()];
}

/** items — a step's items on `lims` for the checked path: `cost` left out when undefined (the default, 1). */
function items(lims: Limiter[], step: Of<typeof stepArb>): CheckAllItem[] {
  return step.items.map((it) => (it.cost === undefined ? { limiter: lims[it.lim % lims.length], key: it.key } : { limiter: lims[it.lim % lims.length], key: it.key, cost: it.cost }));
}

/** planItems — the same for the trusted path, as the service's plan hands them: `cost` undefined or not, other fields. */
function planItems(lims: Limiter[], step: Of<typeof stepArb>): CheckAllItem[] {
  return step.items.map((it) => ({ limiter: lims[it.lim % lims.length], key: it.key, cost: it.cost, ...(it.extra ? { index: 3, spec: {} } : {}) }));
}

/** looks — every limiter's view of every key at `t`, charging nothing. */
function looks(lims: Limiter[], t: number): unknown[] {
  return lims.flatMap((l) => ['a', 'b', 'c'].map((k) => l.checkSync(k, { cost: 0, now: t })));
}

test('checkAllSyncTrusted decides as checkAllSync: the same results and states on twin memory stores', async () => {
  await fc.assert(fc.asyncProperty(fc.array(limiterArb, { minLength: 1, maxLength: 3 }), fc.array(stepArb, { minLength: 1, maxLength: 12 }), async (specs, steps) => {
    clock.t = T0;
    const [checked, trusted] = twins(specs);
    let t = T0;
    for (const step of steps) {
      t += step.gap;
      clock.t = t;
      const o = step.override;
      if (o !== undefined) {
        for (const lims of [checked, trusted]) {
          const l = lims[o.lim % lims.length];
          if (o.kind === 'block') await l.block(o.key, { for: 1_500 });
          else await l.exempt(o.key, { for: 1_500 });
        }
      }
      const a = checkAllSync(items(checked, step), { now: t });
      const b = checkAllSyncTrusted(planItems(trusted, step), { now: t });
      assert.deepEqual(b, a);
      assert.deepEqual(looks(trusted, t), looks(checked, t));
    }
  }), { numRuns: 300 });
});

test('checkAllTrusted decides as checkAll (the asynchronous path, which the service takes on Redis)', async () => {
  await fc.assert(fc.asyncProperty(fc.array(limiterArb, { minLength: 1, maxLength: 3 }), fc.array(stepArb, { minLength: 1, maxLength: 8 }), async (specs, steps) => {
    clock.t = T0;
    const [checked, trusted] = twins(specs);
    let t = T0;
    for (const step of steps) {
      t += step.gap;
      clock.t = t;
      const a = await checkAll(items(checked, step), { now: t });
      const b = await checkAllTrusted(planItems(trusted, step), { now: t });
      assert.deepEqual(b, a);
    }
    assert.deepEqual(looks(trusted, t), looks(checked, t));
  }), { numRuns: 100 });
});

test('the checked path still refuses what the trusted one is never given', () => {
  const store = new MemoryStore();
  const l = limiter({ rules: [rule('fixedWindow', { limit: 2 })], store });
  assert.throws(() => checkAllSync([{ limiter: l, key: '' }]), /key must be a non-empty string/);
  assert.throws(() => checkAllSync([{ limiter: l, key: 'a', cost: -1 }]), /cost must be a finite number >= 0/);
  assert.throws(() => checkAllSync([{ limiter: l, key: 'a', cots: 1 } as unknown as CheckAllItem]), /cots/);
  assert.throws(() => checkAllSync([{ limiter: l, key: 'a', cost: 1, index: 0 } as unknown as CheckAllItem]), /index is not an option/);
  assert.equal(checkAllSyncTrusted([{ limiter: l, key: 'a', cost: 1, index: 0 } as unknown as CheckAllItem]).allowed, true);
});
