/**
 * checkAllSyncTrusted (the limiter service's way in: its items checked by its own plan, not again) against
 * checkAllSync: twin memory stores fed the same random compound requests of valid items — duplicates, cost 0,
 * fractional costs, an item left without cost, extra fields on an item as the service's plan items have — give the
 * same result, field for field, and end in the same state. And what it does not check is what checkAllSync refuses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { limiter, checkAllSync, type Limiter } from '../../src/index.js';
import { checkAllSyncTrusted } from '../../src/multi.js';
import { MemoryStore } from '../../src/stores/memory.js';
import { ALGORITHMS, rule } from './table.js';
import { T0 } from '../conformance/scenarios.js';

const KEYS = ['a', 'b', 'c'];

test('checkAllSyncTrusted decides valid items as checkAllSync does', () => {
  fc.assert(fc.property(
    fc.array(fc.record({ algorithm: fc.constantFrom(...ALGORITHMS), limit: fc.integer({ min: 1, max: 4 }) }), { minLength: 1, maxLength: 3 }),
    fc.array(fc.record({
      gap: fc.integer({ min: 0, max: 3_000 }),
      items: fc.array(fc.record({ lim: fc.nat(), key: fc.constantFrom(...KEYS), cost: fc.constantFrom(undefined, 0, 0.5, 1, 2), extra: fc.boolean() }), { minLength: 1, maxLength: 4 }),
    }), { minLength: 1, maxLength: 20 }),
    (specs, steps) => {
      let now = T0;
      const clock = { now: () => now };
      const make = (): Limiter[] => {
        const store = new MemoryStore();
        return specs.map((s) => limiter({ rules: [rule(s.algorithm, { limit: s.limit })], store, clock }));
      };
      const a = make();
      const b = make();
      for (const [n, step] of steps.entries()) {
        now += step.gap;
        const trusted = step.items.map((it) => ({ limiter: a[it.lim % specs.length], key: it.key, cost: it.cost, ...(it.extra ? { index: 3, spec: {} } : {}) }));
        const checked = step.items.map((it) => (it.cost === undefined ? { limiter: b[it.lim % specs.length], key: it.key } : { limiter: b[it.lim % specs.length], key: it.key, cost: it.cost }));
        assert.deepStrictEqual(checkAllSyncTrusted(trusted), checkAllSync(checked), `step ${n}`);
      }
      now += 1;
      for (let l = 0; l < specs.length; l++) for (const key of KEYS) assert.deepStrictEqual(a[l].checkSync(key, { cost: 0 }), b[l].checkSync(key, { cost: 0 }));
    },
  ), { numRuns: 300 });
});

test('checkAllSync refuses what checkAllSyncTrusted takes on trust', () => {
  const lim = limiter({ rules: '5/1m' });
  assert.throws(() => checkAllSync([{ limiter: lim, key: 'a', cost: 1, index: 0 } as never]), /index is not an option/);
  assert.throws(() => checkAllSync([{ limiter: lim, key: '' }]), /key must be a non-empty string/);
  assert.throws(() => checkAllSync([{ limiter: lim, key: 'a', cost: -1 }]), /cost must be a finite number >= 0/);
  assert.equal(checkAllSyncTrusted([{ limiter: lim, key: 'a', cost: 1, index: 0 } as never]).allowed, true);
});
