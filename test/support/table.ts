import assert from 'node:assert/strict';
import { limiter, type Decision, type RuleConfig, type Limiter } from '../../src/index.js';

/** Row — one request of a table: at time t (ms) with cost, the expected decision (undefined fields are not checked). */
export interface Row {
  t: number;
  cost?: number;
  key?: string;
  allowed: boolean;
  remaining?: number;
  retryAfter?: number;
  resetAfter?: number;
  rate?: number;
  delay?: number;
}

/** close — equal within 1e-9 relative (or 1e-9 absolute near zero); Infinity equals only Infinity. */
export function close(actual: number | undefined, expected: number, what: string): void {
  assert.ok(actual !== undefined, `${what}: missing, expected ${expected}`);
  if (!Number.isFinite(expected)) {
    assert.equal(actual, expected, what);
    return;
  }
  const tol = Math.max(1e-9, Math.abs(expected) * 1e-9);
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: got ${actual}, expected ${expected}`);
}

/** runTable — replays rows through a fresh limiter of `ruleList` (checkSync, explicit now) and checks each row. */
export function runTable(ruleList: RuleConfig[], rows: Row[], lim: Limiter = limiter({ rules: ruleList })): Decision[] {
  return rows.map((row, i) => {
    const d = lim.checkSync(row.key ?? 'k', { now: row.t, cost: row.cost ?? 1 });
    const at = `row ${i} (t=${row.t}, cost=${row.cost ?? 1})`;
    assert.equal(d.allowed, row.allowed, `${at}: allowed`);
    if (row.remaining !== undefined) assert.equal(d.remaining, row.remaining, `${at}: remaining`);
    if (row.retryAfter !== undefined) close(d.retryAfter, row.retryAfter, `${at}: retryAfter`);
    if (row.resetAfter !== undefined) close(d.resetAfter, row.resetAfter, `${at}: resetAfter`);
    if (row.rate !== undefined) close(d.rate, row.rate, `${at}: rate`);
    if (row.delay !== undefined) close(d.delay, row.delay, `${at}: delay`);
    return d;
  });
}
