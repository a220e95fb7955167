/**
 * test/conformance/run — runs the scenario table on a store and compares decisions with another store's.
 */
import assert from 'node:assert/strict';
import { Policy } from '../../src/core/policy.js';
import type { Decision } from '../../src/core/types.js';
import type { BoundStore, Store } from '../../src/stores/types.js';
import { T0, type Scenario, type Step } from './scenarios.js';

/**
 * run — every step of a scenario on a fresh binding of `store`; the decision of each check (undefined for other ops).
 * `id` — the policy's id (a shared state layout on Redis: keys named by the id, gcra keeping its interval).
 */
export async function run(store: Store, s: Scenario, id?: string): Promise<(Decision | undefined)[]> {
  const bound: BoundStore = store.attach(new Policy({ rules: s.rules, dryRun: s.dryRun, id, autoBlock: s.autoBlock }));
  const out: (Decision | undefined)[] = [];
  for (const step of s.steps) out.push(await apply(bound, step));
  return out;
}

async function apply(b: BoundStore, st: Step): Promise<Decision | undefined> {
  const now = T0 + st.t;
  switch (st.op) {
    case 'check': return await b.evaluate(st.key, st.cost ?? 1, now);
    case 'block': case 'exempt':
      await b.setOverride(st.key, { kind: st.op, for: st.for ?? Infinity, reason: st.reason }, now);
      return undefined;
    case 'unblock': await b.clearOverride(st.key, 'block'); return undefined;
    case 'unexempt': await b.clearOverride(st.key, 'exempt'); return undefined;
    case 'reset': await b.reset(st.key); return undefined;
  }
}

/** close — equal numbers up to 1e-9 relative (and 1e-9 absolute near zero); Infinity and NaN equal only themselves. */
function close(a: number, b: number): boolean {
  if (Object.is(a, b) || a === b) return true;
  if (Number.isNaN(a) || Number.isNaN(b) || !Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

/** fields — the keys of an object whose value is not undefined (a field set to undefined is an absent field). */
const fields = (o: object): string[] => Object.keys(o).filter((k) => (o as Record<string, unknown>)[k] !== undefined).sort();

/** same — deep equality of two decisions, numbers compared with `close`, the same fields present on both. */
export function same(a: unknown, b: unknown, path = 'decision'): void {
  if (typeof a === 'number' && typeof b === 'number') {
    assert.ok(close(a, b), `${path}: ${a} vs ${b}`);
    return;
  }
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) {
    assert.equal(a, b, `${path}: ${String(a)} vs ${String(b)}`);
    return;
  }
  const ka = fields(a);
  const kb = fields(b);
  assert.deepEqual(ka, kb, `${path}: fields differ`);
  for (const k of ka) same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
}

/** checkExpectations — the fields a step says its decision must have. */
export function checkExpectations(s: Scenario, decisions: (Decision | undefined)[]): void {
  s.steps.forEach((st, i) => {
    if (st.expect === undefined) return;
    const d = decisions[i];
    assert.ok(d, `${s.name} step ${i}: no decision`);
    for (const [k, v] of Object.entries(st.expect)) {
      const got: unknown = (d as unknown as Record<string, unknown>)[k];
      if (typeof v === 'number') assert.ok(close(got as number, v), `${s.name} step ${i} (t=${st.t}): ${k} ${String(got)}, expected ${v}`);
      else assert.equal(got, v, `${s.name} step ${i} (t=${st.t}): ${k}`);
    }
  });
}

/** compare — the scenario's decisions on `store` equal the reference decisions, step by step. */
export function compare(s: Scenario, ref: (Decision | undefined)[], got: (Decision | undefined)[]): void {
  s.steps.forEach((st, i) => same(got[i], ref[i], `${s.name} step ${i} (${st.op} ${JSON.stringify(st.key)} t=${st.t} cost=${st.cost ?? 1})`));
}
