import { RatekeeperError, show } from '../core/errors.js';

/**
 * OUTCOMES — the columns of the decision counters, one per Decision.reason. A refusal is `limited` or `blocked`
 * (or `store-unavailable` failing closed); `dry-run` is a refusal that was let through.
 */
export const OUTCOMES = ['allowed', 'limited', 'blocked', 'exempt', 'dry-run', 'store-unavailable'] as const;
export type OutcomeName = (typeof OUTCOMES)[number];

/** Series — one column over time: `values[i]` is the count of the bucket starting at `start + i·step` ms. */
export interface Series {
  start: number;
  step: number;
  values: number[];
}

/**
 * DecisionSeries — counters of decisions by column (the outcomes, then one "refused by this rule" column per rule),
 * in total and per time bucket over a fixed span (the last hour by default): a ring of Uint32 buckets per column.
 * The ring holds at most `span / step` buckets (3600 buckets × 8 columns × 4 bytes = 115 KB for a one-rule policy at
 * 1 s) but is allocated as time passes with decisions in it: nothing before the first decision, then FIRST_BUCKETS,
 * doubled whenever the buckets since the first decision no longer fit. So a limiter that decides nothing costs
 * nothing here, and one that decided for a minute about 2 KB. Buckets are aligned to the epoch; a bucket older than
 * the span is overwritten when time reaches it again.
 */
export class DecisionSeries {
  readonly step: number;
  readonly buckets: number;
  readonly columns: number;
  /** totals — per column, since the start (Float64: no wrap). */
  readonly totals: Float64Array;
  /**
   * ring — bucket b of column c at ((b mod cap)·columns + c), for b in (head − cap, head] and b >= origin: while cap
   * is under `buckets`, every bucket since the origin fits (head − origin < cap).
   */
  private ring: Uint32Array = EMPTY;
  /** cap — buckets the ring holds now (0 before the first decision; at most `buckets`). */
  private cap = 0;
  /** head — the newest bucket number (floor(t / step)) written; older ones were cleared when passed. */
  private head = Number.NaN;
  /** origin — the first bucket written: reads start no earlier. */
  private origin = Number.NaN;

  constructor(columns: number, step = 1000, span = 3_600_000) {
    if (typeof step !== 'number' || !(step >= 1000 && step <= 10_000)) {
      throw new RatekeeperError(`observe.resolution must be from 1000 to 10000 ms, got ${show(step)}`);
    }
    this.step = step;
    this.buckets = Math.ceil(span / step);
    this.columns = columns;
    this.totals = new Float64Array(columns);
  }

  /** bytes — the memory of the ring and totals now. */
  get bytes(): number {
    return this.ring.byteLength + this.totals.byteLength;
  }

  /** at — where `bump` counts: the bucket of the latest `moveTo` (−1: older than the span kept: totals only). */
  private at = -1;

  /** add — counts one decision in `column` at `t` (ms). A time before the span kept is counted in the totals only. */
  add(t: number, column: number): void {
    this.moveTo(t);
    this.bump(column);
  }

  /** moveTo — the bucket of `t` (ms) becomes the one `bump` counts in (the hot path calls it once per new ms). */
  moveTo(t: number): void {
    const b = Math.floor(t / this.step);
    if (b !== this.head && !this.advance(b)) {
      this.at = -1;
      return;
    }
    this.at = (b % this.cap) * this.columns;
  }

  /** bump — counts one decision in `column`, in the bucket of the latest `moveTo`. */
  bump(column: number): void {
    this.totals[column]++;
    if (this.at >= 0) this.ring[this.at + column]++;
  }

  /** read — every column's buckets from `from` (ms, clamped to the span kept and to the first decision) to the newest bucket at `now`. */
  read(now: number, from = -Infinity): Series[] {
    const end = Math.floor(now / this.step);
    const head = this.head === this.head ? this.head : -Infinity;
    const oldest = end - this.buckets + 1;
    const first = Math.min(end, Math.max(oldest, Math.floor(from / this.step), this.origin === this.origin ? this.origin : end));
    const out: Series[] = [];
    for (let c = 0; c < this.columns; c++) {
      const values: number[] = [];
      // buckets after the head saw no decision (cleared once time reaches them); those before it are in the ring
      for (let b = first; b <= end; b++) values.push(b <= head && b > head - this.cap ? this.ring[(b % this.cap) * this.columns + c] : 0);
      out.push({ start: first * this.step, step: this.step, values });
    }
    return out;
  }

  /** advance — moves the head to bucket b, clearing the buckets passed; false when b is older than the span kept. */
  private advance(b: number): boolean {
    const head = this.head;
    if (head !== head) {
      this.head = this.origin = b;
      this.fit(1);
      return true;
    }
    if (b < head) return b > head - this.buckets && b >= this.origin;
    if (this.cap < this.buckets) this.fit(b - this.origin + 1);
    const clear = Math.min(b - head, this.cap);
    for (let k = 1; k <= clear; k++) {
      const at = ((head + k) % this.cap) * this.columns;
      this.ring.fill(0, at, at + this.columns);
    }
    this.head = b;
    return true;
  }

  /** fit — a ring of at least `n` buckets (doubling, at most `buckets`), the buckets held moved to their new places. */
  private fit(n: number): void {
    if (n <= this.cap) return;
    let cap = Math.max(this.cap, FIRST_BUCKETS);
    while (cap < n) cap *= 2;
    cap = Math.min(cap, this.buckets);
    if (cap === this.cap) return;
    const ring = new Uint32Array(cap * this.columns);
    const cols = this.columns;
    if (this.cap > 0) {
      for (let b = Math.max(this.origin, this.head - this.cap + 1); b <= this.head; b++) {
        const from = (b % this.cap) * cols;
        ring.set(this.ring.subarray(from, from + cols), (b % cap) * cols);
      }
    }
    this.ring = ring;
    this.cap = cap;
  }
}

/** EMPTY — the ring before the first decision. */
const EMPTY = new Uint32Array(0);

/** FIRST_BUCKETS — the ring's size at the first decision (a minute at 1 s), doubled as time passes. */
const FIRST_BUCKETS = 64;
