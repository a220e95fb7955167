import { RatekeeperError, show } from '../core/errors.js';

/** HeavyHittersOptions — the summary's size and memory. */
export interface HeavyHittersOptions {
  /**
   * capacity — clients tracked at once (Space-Saving counters). Memory is fixed by it, whatever the number of
   * clients: about 100 bytes per counter plus its key. Every client with more than 1/capacity of the recent traffic
   * is always among them. @default 1000
   */
  capacity?: number;
  /**
   * halfLife — ms after which past traffic weighs half (the same estimator as EARRRL's: an exponentially weighted
   * moving count); Infinity counts all traffic since the start, undecayed. @default 10_000
   */
  halfLife?: number;
}

/** HeavyHitter — one client of the summary, as of `now`. */
export interface HeavyHitter {
  key: string;
  /** rate — the client's recent rate, cost units per second (decayed count × λ); overestimated by at most `error`. */
  rate: number;
  /** error — the most `rate` may be over the truth, per second (what the counter inherited when the client entered). */
  error: number;
  /** refusedRate — the recent rate of its refused requests, cost units per second (counted since it entered). */
  refusedRate: number;
  /** requests, refused — cost units seen and refused since `firstSeen` (undecayed). */
  requests: number;
  refused: number;
  /** firstSeen — ms: when the client last entered the summary; lastSeen — ms: its latest request. */
  firstSeen: number;
  lastSeen: number;
  /** measured — the rate its rules measured at its latest request (earrrl, exponential), per second; undefined when none does. */
  measured?: number;
}

/** RENORMALIZE — λ·(t − landmark) past which the forward-decay weights are scaled back (e^50 keeps 250 orders of headroom). */
const RENORMALIZE = 50;

/**
 * HeavyHitters — the heaviest clients of a stream by recent rate, in memory fixed by `capacity`: Space-Saving
 * (Metwally, Agrawal, El Abbadi 2005) over forward-decayed weights (Cormode, Shkapenyuk, Srivastava, Xu 2009).
 *
 * A request of cost c at time t adds c·e^{λ(t − L)} to its client's counter (L, the landmark, is moved forward now
 * and then, scaling every counter by the same factor, so the weights never overflow); the counter times
 * λ·e^{−λ(now − L)} is the client's exponentially weighted recent rate — EARRRL's estimate, per second.
 * A client not in the summary takes over the smallest counter and inherits its count as `error`. The guarantees
 * of Space-Saving hold for the decayed counts: every counter overestimates its client's by at most the smallest
 * counter, which is at most the total decayed weight / capacity; so every client with more than 1/capacity of
 * the (decayed) traffic is in the summary, and its rate is within total/capacity of the truth.
 *
 * Counters live in typed arrays indexed by slot; a min-heap of slots finds the smallest counter in O(1), and an
 * update costs one Map lookup and a sift of O(log capacity), with no allocation once a client is tracked.
 */
export class HeavyHitters {
  readonly capacity: number;
  readonly halfLife: number;
  /** lambda — decay rate per ms (ln 2 / halfLife; 0 for Infinity). */
  readonly lambda: number;
  /** total — the decayed weight of every request seen, in landmark units (same scale as `count`). */
  private total = 0;
  /** landmark — ms: the time whose weight is 1. */
  private landmark = Number.NaN;
  /** slots — key → slot; size <= capacity. */
  private readonly slots = new Map<string, number>();
  private readonly keys: string[];
  /** count, error, refusedCount — landmark units: decayed weight, inherited overestimate, decayed refused weight. */
  private readonly count: Float64Array;
  private readonly error: Float64Array;
  private readonly refusedCount: Float64Array;
  /** requests, refused — undecayed cost since firstSeen. */
  private readonly requests: Float64Array;
  private readonly refused: Float64Array;
  private readonly first: Float64Array;
  private readonly last: Float64Array;
  /** measured — the rules' rate at the latest request (NaN: none measured). */
  private readonly measured: Float64Array;
  /** heap — slots as a min-heap on count: heap[0] is the slot to take over; where[slot] is its place in heap. */
  private readonly heap: Int32Array;
  private readonly where: Int32Array;
  /** memo — the weight of the latest time seen, so that a burst at one ms costs one exp. */
  private memoT = Number.NaN;
  private memoW = 1;

  constructor(options: HeavyHittersOptions = {}) {
    const capacity = options.capacity ?? 1000;
    if (!Number.isSafeInteger(capacity) || capacity < 1 || capacity > 1_000_000) {
      throw new RatekeeperError(`observe.capacity must be an integer from 1 to 1000000, got ${show(options.capacity)}`);
    }
    const halfLife = options.halfLife ?? 10_000;
    if (typeof halfLife !== 'number' || !(halfLife > 0)) {
      throw new RatekeeperError(`observe.halfLife must be a number of ms > 0 (or Infinity), got ${show(options.halfLife)}`);
    }
    this.capacity = capacity;
    this.halfLife = halfLife;
    this.lambda = halfLife === Infinity ? 0 : Math.LN2 / halfLife;
    this.keys = new Array<string>(capacity);
    this.count = new Float64Array(capacity);
    this.error = new Float64Array(capacity);
    this.refusedCount = new Float64Array(capacity);
    this.requests = new Float64Array(capacity);
    this.refused = new Float64Array(capacity);
    this.first = new Float64Array(capacity);
    this.last = new Float64Array(capacity);
    this.measured = new Float64Array(capacity);
    this.heap = new Int32Array(capacity);
    this.where = new Int32Array(capacity);
  }

  /** size — clients tracked now (<= capacity). */
  get size(): number {
    return this.slots.size;
  }

  /** bytes — the memory of the counters (typed arrays), without the key strings (which the caller's keys bound). */
  get bytes(): number {
    return this.capacity * (8 * 8 + 4 * 2 + 8);
  }

  /**
   * add — one request of `key` of `cost` at `t` (ms), refused or not, with the rate its rules measured (NaN: none).
   * Times may arrive slightly out of order (several instances' clocks): an older one simply weighs less.
   */
  add(key: string, cost: number, t: number, refused: boolean, measured: number): void {
    const w = cost * this.weight(t);
    this.total += w;
    let slot = this.slots.get(key);
    if (slot === undefined) {
      slot = this.enter(key, t);
    } else if (t > this.last[slot]) {
      this.last[slot] = t;
    }
    this.count[slot] += w;
    this.requests[slot] += cost;
    if (refused) {
      this.refusedCount[slot] += w;
      this.refused[slot] += cost;
    }
    this.measured[slot] = measured;
    this.down(this.where[slot]);
  }

  /** top — the `n` heaviest clients as of `now` (ms), by recent rate or by refused rate, heaviest first. */
  top(n: number, now: number, by: 'rate' | 'refused' = 'rate'): HeavyHitter[] {
    const size = this.slots.size;
    const order = new Int32Array(size);
    for (let i = 0; i < size; i++) order[i] = i;
    const key = by === 'rate' ? this.count : this.refusedCount;
    order.sort((a, b) => key[b] - key[a]);
    const out: HeavyHitter[] = [];
    for (let i = 0; i < size && out.length < n; i++) {
      if (by === 'refused' && key[order[i]] === 0) break;
      out.push(this.entry(order[i], now));
    }
    return out;
  }

  /** get — one client's entry as of `now`, or undefined when it is not tracked. */
  get(key: string, now: number): HeavyHitter | undefined {
    const slot = this.slots.get(key);
    return slot === undefined ? undefined : this.entry(slot, now);
  }

  /** totalRate — the recent rate of all traffic, cost units per second, as of `now`. */
  totalRate(now: number): number {
    return this.toRate(this.total, now);
  }

  /** minRate — the smallest counter as a rate: the bound on every `error`, and what a client needs to be sure to be listed. */
  minRate(now: number): number {
    return this.slots.size < this.capacity ? 0 : this.toRate(this.count[this.heap[0]], now);
  }

  /** clear — forgets every client. */
  clear(): void {
    this.slots.clear();
    this.total = 0;
    this.landmark = Number.NaN;
    this.memoT = Number.NaN;
  }

  private entry(slot: number, now: number): HeavyHitter {
    const m = this.measured[slot];
    const e: HeavyHitter = {
      key: this.keys[slot], rate: this.toRate(this.count[slot], now), error: this.toRate(this.error[slot], now),
      refusedRate: this.toRate(this.refusedCount[slot], now), requests: this.requests[slot], refused: this.refused[slot],
      firstSeen: this.first[slot], lastSeen: this.last[slot],
    };
    if (m === m) e.measured = m;
    return e;
  }

  /** toRate — landmark units to cost units per second at `now` (undecayed: per second since the first request). */
  private toRate(c: number, now: number): number {
    if (this.lambda === 0) {
      const span = now - this.landmark;
      return span > 0 ? (c * 1000) / span : 0;
    }
    return c * this.lambda * 1000 * Math.exp(-this.lambda * (now - this.landmark));
  }

  /** weight — e^{λ(t − L)}, moving the landmark to t (scaling every counter) when it grows too large. */
  private weight(t: number): number {
    if (t === this.memoT) return this.memoW;
    if (this.landmark !== this.landmark) this.landmark = t;
    let x = this.lambda * (t - this.landmark);
    if (x > RENORMALIZE) {
      this.rescale(Math.exp(-x));
      this.landmark = t;
      x = 0;
    }
    this.memoT = t;
    this.memoW = Math.exp(x);
    return this.memoW;
  }

  private rescale(f: number): void {
    this.total *= f;
    for (let i = 0, n = this.slots.size; i < n; i++) {
      this.count[i] *= f;
      this.error[i] *= f;
      this.refusedCount[i] *= f;
    }
  }

  /** enter — a slot for a new client: a free one, or the smallest counter's (Space-Saving: its count becomes the error). */
  private enter(key: string, t: number): number {
    let slot = this.slots.size;
    if (slot < this.capacity) {
      this.heap[slot] = slot;
      this.where[slot] = slot;
      this.count[slot] = 0;
      this.error[slot] = 0;
      this.up(slot);
    } else {
      slot = this.heap[0];
      this.slots.delete(this.keys[slot]);
      this.error[slot] = this.count[slot];
    }
    this.slots.set(key, slot);
    this.keys[slot] = key;
    this.refusedCount[slot] = 0;
    this.requests[slot] = 0;
    this.refused[slot] = 0;
    this.first[slot] = t;
    this.last[slot] = t;
    return slot;
  }

  /** down — restores the heap below place i after its counter grew. */
  private down(i: number): void {
    const heap = this.heap;
    const count = this.count;
    const n = this.slots.size;
    const slot = heap[i];
    const c = count[slot];
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const m = r < n && count[heap[r]] < count[heap[l]] ? r : l;
      if (count[heap[m]] >= c) break;
      heap[i] = heap[m];
      this.where[heap[i]] = i;
      i = m;
    }
    heap[i] = slot;
    this.where[slot] = i;
  }

  /** up — restores the heap above place i (a new counter of 0 goes to the top). */
  private up(i: number): void {
    const heap = this.heap;
    const count = this.count;
    const slot = heap[i];
    const c = count[slot];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (count[heap[p]] <= c) break;
      heap[i] = heap[p];
      this.where[heap[i]] = i;
      i = p;
    }
    heap[i] = slot;
    this.where[slot] = i;
  }
}
