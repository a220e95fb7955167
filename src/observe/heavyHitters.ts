import { RatekeeperError, show } from '../core/errors.js';

/** HeavyHittersOptions — the summary's size and memory. */
export interface HeavyHittersOptions {
  /**
   * capacity — every client with more than 1/capacity of the recent traffic is always listed. Memory is bounded by it,
   * whatever the number of clients: at most 2 × capacity counters of 64 bytes plus their keys, allocated as clients
   * are seen (nothing before the first). @default 1000
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
  /** rate — the client's recent rate, cost units per second (decayed count × λ); under the truth by at most `error`. */
  rate: number;
  /** error — the most `rate` may be under the truth, per second (the same for every client: what was subtracted to make room). */
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
 * HeavyHitters — the heaviest clients of a stream by recent rate, in memory bounded by `capacity`: the Frequent
 * (Misra–Gries) summary with batched decrements, over forward-decayed weights (Cormode, Shkapenyuk, Srivastava,
 * Xu 2009).
 *
 * A request of cost c at time t adds c·e^{λ(t − L)} to its client's counter (L, the landmark, is moved forward now
 * and then, scaling every counter by the same factor, so the weights never overflow); a counter times
 * λ·e^{−λ(now − L)} is that client's exponentially weighted recent rate — EARRRL's estimate, per second.
 * There are 2·capacity counters. When they are all taken and a new client comes, the capacity-th largest count m
 * is found (quickselect, O(capacity)) and subtracted from every counter; the counters left at or below 0 (at least
 * capacity of them) are freed. So a client's count is under its true decayed count by at most the sum D of the
 * subtractions, and since each one removed at least capacity·m of weight, D <= total / capacity: every client with
 * more than 1/capacity of the (decayed) traffic keeps a positive counter and is listed, its rate in
 * [rate, rate + error] with error = D as a rate.
 *
 * A client already counted costs one Map lookup and a few additions; a new one a Map insertion, and every
 * capacity-th new one a pass over the counters: O(1) amortized, no allocation per request but the Map's.
 */
export class HeavyHitters {
  readonly capacity: number;
  readonly halfLife: number;
  /** lambda — decay rate per ms (ln 2 / halfLife; 0 for Infinity). */
  readonly lambda: number;
  /** slotsMax — counters kept: 2 × capacity. */
  private readonly slotsMax: number;
  /** total — the decayed weight of every request seen, in landmark units (same scale as `count`). */
  private total = 0;
  /** dropped — D: the sum of the subtractions, landmark units (<= total / capacity). */
  private dropped = 0;
  /** landmark — ms: the time whose weight is 1. */
  private landmark = Number.NaN;
  /** slots — key → slot; slots 0 … size−1 are taken. */
  private readonly slots = new Map<string, number>();
  private readonly keys: string[] = [];
  /**
   * count, refusedCount — landmark units: decayed weight counted (minus D's part), decayed refused weight since entry.
   * These arrays (and the six below) hold `allocated` slots: none until the first request, then doubling as clients
   * come, up to slotsMax — so a summary costs memory in proportion to the clients it has seen, not its capacity.
   */
  private count: Float64Array = EMPTY;
  private refusedCount: Float64Array = EMPTY;
  /** requests, refused — undecayed cost since firstSeen. */
  private requests: Float64Array = EMPTY;
  private refused: Float64Array = EMPTY;
  private first: Float64Array = EMPTY;
  private last: Float64Array = EMPTY;
  /** measured — the rules' rate at the latest request (NaN: none measured). */
  private measured: Float64Array = EMPTY;
  /** scratch — a copy of the counts for quickselect (allocated at the first shrink: only a full summary needs it). */
  private scratch: Float64Array = EMPTY;
  /** allocated — slots the arrays hold now (<= slotsMax). */
  private allocated = 0;
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
    this.slotsMax = 2 * capacity;
  }

  /** size — clients counted now (<= 2 × capacity). */
  get size(): number {
    return this.slots.size;
  }

  /** bytes — the memory of the counters (typed arrays) now, without the key strings (at most 2 × capacity of them). */
  get bytes(): number {
    return this.allocated * 7 * 8 + this.scratch.byteLength;
  }

  /**
   * add — one request of `key` of `cost` at `t` (ms), refused or not, with the rate its rules measured (NaN: none).
   * Times may arrive slightly out of order (several instances' clocks): an older one simply weighs less.
   */
  add(key: string, cost: number, t: number, refused: boolean, measured: number): void {
    const w = cost * (t === this.memoT ? this.memoW : this.weight(t));
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
      if (key[order[i]] <= 0) break;
      out.push(this.entry(order[i], now));
    }
    return out;
  }

  /** get — one client's entry as of `now`, or undefined when it is not counted. */
  get(key: string, now: number): HeavyHitter | undefined {
    const slot = this.slots.get(key);
    return slot === undefined ? undefined : this.entry(slot, now);
  }

  /** totalRate — the recent rate of all traffic, cost units per second, as of `now`. */
  totalRate(now: number): number {
    return this.toRate(this.total, now);
  }

  /** minRate — D as a rate: the most any rate is under the truth; a client above it is sure to be listed. */
  minRate(now: number): number {
    return this.toRate(this.dropped, now);
  }

  /** clear — forgets every client. */
  clear(): void {
    this.slots.clear();
    this.total = this.dropped = 0;
    this.landmark = Number.NaN;
    this.memoT = Number.NaN;
  }

  private entry(slot: number, now: number): HeavyHitter {
    const m = this.measured[slot];
    const e: HeavyHitter = {
      key: this.keys[slot], rate: this.toRate(this.count[slot], now), error: this.toRate(this.dropped, now),
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
    if (this.landmark !== this.landmark) this.landmark = t;
    let x = this.lambda * (t - this.landmark);
    if (x > RENORMALIZE) {
      const f = Math.exp(-x);
      this.total *= f;
      this.dropped *= f;
      for (let i = 0, n = this.slots.size; i < n; i++) {
        this.count[i] *= f;
        this.refusedCount[i] *= f;
      }
      this.landmark = t;
      x = 0;
    }
    this.memoT = t;
    this.memoW = Math.exp(x);
    return this.memoW;
  }

  /** enter — a counter for a new client: the next free one, after making room when all are taken. */
  private enter(key: string, t: number): number {
    if (this.slots.size === this.slotsMax) this.shrink();
    const slot = this.slots.size;
    if (slot === this.allocated) this.grow();
    this.slots.set(key, slot);
    this.keys[slot] = key;
    this.count[slot] = 0;
    this.refusedCount[slot] = 0;
    this.requests[slot] = 0;
    this.refused[slot] = 0;
    this.first[slot] = t;
    this.last[slot] = t;
    return slot;
  }

  /** grow — room for more clients: the arrays doubled (FIRST_SLOTS at the first client), at most slotsMax. */
  private grow(): void {
    const n = Math.min(this.slotsMax, Math.max(FIRST_SLOTS, 2 * this.allocated));
    this.count = grown(this.count, n);
    this.refusedCount = grown(this.refusedCount, n);
    this.requests = grown(this.requests, n);
    this.refused = grown(this.refused, n);
    this.first = grown(this.first, n);
    this.last = grown(this.last, n);
    this.measured = grown(this.measured, n);
    this.allocated = n;
  }

  /** shrink — subtracts the capacity-th largest count from every counter and frees those left at or below 0, packing the rest. */
  private shrink(): void {
    const n = this.slots.size;
    const count = this.count;
    if (this.scratch.length < n) this.scratch = new Float64Array(this.slotsMax);
    const s = this.scratch;
    s.set(count.subarray(0, n));
    const m = select(s, n, this.capacity - 1);
    this.dropped += m;
    let to = 0;
    for (let from = 0; from < n; from++) {
      const c = count[from] - m;
      const key = this.keys[from];
      if (c <= 0) {
        this.slots.delete(key);
        continue;
      }
      if (to !== from) {
        this.keys[to] = key;
        this.slots.set(key, to);
        this.refusedCount[to] = this.refusedCount[from];
        this.requests[to] = this.requests[from];
        this.refused[to] = this.refused[from];
        this.first[to] = this.first[from];
        this.last[to] = this.last[from];
        this.measured[to] = this.measured[from];
      }
      count[to] = c;
      to++;
    }
  }
}

/** EMPTY — the arrays of a summary that has seen no client yet. */
const EMPTY = new Float64Array(0);

/** FIRST_SLOTS — the slots allocated at a summary's first client (then doubled as needed). */
const FIRST_SLOTS = 16;

/** grown — `a` copied into a new array of `n` numbers. */
function grown(a: Float64Array, n: number): Float64Array {
  const b = new Float64Array(n);
  b.set(a);
  return b;
}

/** select — the k-th largest (0-based) of a[0 … n) by quickselect, reordering a. */
function select(a: Float64Array, n: number, k: number): number {
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const x = a[i];
        a[i] = a[j];
        a[j] = x;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return a[k];
  }
  return a[k];
}
