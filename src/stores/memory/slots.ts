/**
 * stores/memory/slots — where a memory table keeps its clients: a Map from key to slot, the state of slot i at
 * slab[i·stride … (i+1)·stride), per slot the inline log's head and size (or BIG: a Log of its own), and two doubly
 * linked LRU lists over slots in Int32Arrays (no object per client but the key string itself). Which slot a new
 * client takes when the table is full is decided here; whether a penalty is over, by the table (`over`).
 */
import type { Log } from '../../core/algorithms/slidingLog.js';

export const NONE = -1;

/** INLINE — log entries kept in a client's slot; a longer log gets an array of its own (and comes back when short). */
export const INLINE = 3;
/** BIG — logMeta of a slot whose log has a Log of its own (in bigLogs); otherwise logMeta is head·4 + size. */
export const BIG = 255;
/**
 * PENALTY_LOOK — how many of the least recently used clients in penalty an insert into a full table looks at for one
 * whose penalty is over (each look is one verdict of the rules: bounded, so a flood of fresh keys into a table of
 * penalties costs at most this many per new key).
 */
const PENALTY_LOOK = 16;

/** NORMAL, PENALTY — the two LRU lists: clients whose last decision admitted them, and those it refused. */
export const NORMAL = 0;
export const PENALTY = 1;
/** FIRST_SLOTS — client slots allocated at a table's first client (none before), then doubled as clients come. */
const FIRST_SLOTS = 16;

/**
 * Slots — the clients of one table and their order of use. Eviction, when the table is full: a client whose last
 * decision refused it is in penalty (until a request of cost 1 would pass) and sits on the PENALTY list; everyone
 * else on the NORMAL list. A new client takes the slot of, in this order: a penalty client whose penalty is over
 * (the first found among the PENALTY_LOOK least recently used), the least recently used normal client, the least
 * recently used penalty client. So a flood of fresh keys never wipes a penalty while the table holds anyone else,
 * and each insert does O(1) work.
 */
export abstract class Slots {
  /** slots — key → slot; size() <= maxKeys. */
  protected readonly slots = new Map<string, number>();
  /** keys — slot → key, for eviction. */
  protected keys: string[] = [];
  /** slab — the clients' state, `stride` numbers per slot; all zero is a fresh client. */
  protected slab: Float64Array;
  /** newer, older — the LRU lists' links; list[slot] says which list a slot is on (NORMAL or PENALTY). */
  protected newer: Int32Array;
  protected older: Int32Array;
  protected list: Uint8Array;
  /** mru, lru — per list, the most recently used slot and the next to evict (NONE when the list is empty). */
  protected readonly mru = new Int32Array([NONE, NONE]);
  protected readonly lru = new Int32Array([NONE, NONE]);
  /** logAt — where a slot's log header starts within its stride (−1: the policy has no slidingLog rule). */
  protected readonly logAt: number;
  /** logMeta — per slot, its log's head·4 + size when inline (the base is the slot's first log number), or BIG. */
  protected logMeta: Uint8Array;
  /** bigLogs — slot → the Log of a log longer than INLINE entries (a ring of its own) where logMeta[slot] is BIG. */
  protected bigLogs: (Log | undefined)[] = [];

  /**
   * @param stride — numbers per slot (the rules' state, then the log's header and INLINE entries when `logAt` >= 0).
   * @param logAt — where a slot's log header starts within its stride; −1: no log.
   */
  constructor(readonly maxKeys: number, protected readonly stride: number, logAt: number) {
    this.logAt = logAt;
    // nothing for clients until the first one comes (a service with many limits, most of them idle), then doubling
    this.slab = new Float64Array(0);
    this.newer = new Int32Array(0);
    this.older = new Int32Array(0);
    this.list = new Uint8Array(0);
    this.logMeta = new Uint8Array(0);
  }

  /** size — clients tracked now. */
  get size(): number {
    return this.slots.size;
  }

  /** over — whether the penalty of the client in `slot` is over: every rule would admit a request of cost 1 now. */
  protected abstract over(slot: number, now: number): boolean;

  /** wipe — `slot`'s state back to a fresh client's (its log too). */
  protected wipe(slot: number): void {
    this.slab.fill(0, slot * this.stride, (slot + 1) * this.stride);
    if (this.logAt >= 0) {
      this.logMeta[slot] = 0;
      this.bigLogs[slot] = undefined;
    }
  }

  /** forget — every client. */
  protected forget(): void {
    this.slots.clear();
    this.bigLogs = [];
    this.keys = [];
    this.slab.fill(0);
    this.logMeta.fill(0);
    this.mru.fill(NONE);
    this.lru.fill(NONE);
  }

  /**
   * insert — a slot for a new key, on the NORMAL list: the next free one, or when the table is full the slot of
   * `victim` — wiped.
   */
  protected insert(key: string, now: number): number {
    let slot = this.slots.size;
    if (slot >= this.maxKeys) {
      slot = this.victim(now);
      this.unlink(slot);
      this.slots.delete(this.keys[slot]);
      this.wipe(slot);
    } else if (slot >= this.newer.length) {
      this.grow();
    }
    this.slots.set(key, slot);
    this.keys[slot] = key;
    this.pushFront(slot, NORMAL);
    return slot;
  }

  /**
   * victim — the slot a new client takes when the table is full: a client in penalty whose penalty is over (among the
   * PENALTY_LOOK least recently used in penalty: penalties do not end in the order they began — a refusal of cost 2,
   * or a client whose oldest request is older, ends first), else the least recently used client not in penalty, else
   * the least recently used client in penalty.
   */
  private victim(now: number): number {
    let p = this.lru[PENALTY];
    for (let i = 0; p !== NONE && i < PENALTY_LOOK; i++, p = this.newer[p]) if (this.over(p, now)) return p;
    return this.lru[NORMAL] !== NONE ? this.lru[NORMAL] : this.lru[PENALTY];
  }

  /** unlink — `slot` taken off its list. */
  protected unlink(slot: number): void {
    const l = this.list[slot];
    const n = this.newer[slot];
    const o = this.older[slot];
    if (n === NONE) this.mru[l] = o;
    else this.older[n] = o;
    if (o === NONE) this.lru[l] = n;
    else this.newer[o] = n;
  }

  /** pushFront — `slot` put at the front (most recently used) of list `l`. */
  protected pushFront(slot: number, l: number): void {
    const m = this.mru[l];
    this.list[slot] = l;
    this.newer[slot] = NONE;
    this.older[slot] = m;
    if (m !== NONE) this.newer[m] = slot;
    this.mru[l] = slot;
    if (this.lru[l] === NONE) this.lru[l] = slot;
  }

  /** grow — room for more clients: the arrays doubled (FIRST_SLOTS at the first client), at most maxKeys. */
  private grow(): void {
    const cap = Math.min(this.maxKeys, Math.max(FIRST_SLOTS, this.newer.length * 2));
    const slab = new Float64Array(cap * this.stride);
    slab.set(this.slab);
    this.slab = slab;
    const newer = new Int32Array(cap);
    newer.set(this.newer);
    this.newer = newer;
    const older = new Int32Array(cap);
    older.set(this.older);
    this.older = older;
    const list = new Uint8Array(cap);
    list.set(this.list);
    this.list = list;
    if (this.logAt >= 0) {
      const meta = new Uint8Array(cap);
      meta.set(this.logMeta);
      this.logMeta = meta;
    }
  }
}
