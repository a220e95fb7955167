import type { Decision, Override } from '../core/types.js';
import type { Policy } from '../core/policy.js';
import type { Log } from '../core/algorithms/slidingLog.js';
import { RatekeeperError, show } from '../core/errors.js';
import type { BoundStore, OverrideEntry, OverrideRequest, Store } from './types.js';

/** MemoryStoreOptions — the embedded store's bounds. */
export interface MemoryStoreOptions {
  /**
   * maxKeys — the most clients tracked per limiter; past it the least recently used one is forgotten (as the
   * EARRRL document asks: an LRU, not a TTL, so an active offender is never forgotten while it stays active).
   * @default 1_000_000
   */
  maxKeys?: number;
}

/**
 * MemoryStore — the embedded default: per limiter, a bounded table of clients. No timer per key and nothing in
 * the background: a client's state is only dropped when the table is full and it is the least recently used.
 */
export class MemoryStore implements Store {
  readonly maxKeys: number;
  /** tables — one per attached policy. */
  private readonly tables = new Map<Policy, MemoryTable>();

  constructor(options: MemoryStoreOptions = {}) {
    const max = options.maxKeys ?? 1_000_000;
    if (!Number.isSafeInteger(max) || max < 1) throw new RatekeeperError(`memoryStore.maxKeys must be an integer >= 1, got ${show(max)}`);
    this.maxKeys = max;
  }

  attach(policy: Policy): MemoryTable {
    let t = this.tables.get(policy);
    if (!t) {
      t = new MemoryTable(policy, this.maxKeys);
      this.tables.set(policy, t);
    }
    return t;
  }

  close(): void {
    for (const t of this.tables.values()) t.clear();
  }
}

const NONE = -1;

/** Listed — an override as the table keeps it: with `since`, ms when it was set (for listing). */
interface Listed extends Override {
  since: number;
}

function entry(key: string, o: Listed): OverrideEntry {
  const e: OverrideEntry = { key, kind: o.kind, until: o.until, since: o.since };
  if (o.reason !== undefined) e.reason = o.reason;
  return e;
}

/**
 * MemoryTable — the clients of one policy: a Map from key to slot, the rule state of slot i at
 * slab[i·stride … (i+1)·stride), a log per slot for slidingLog rules, and a doubly linked LRU list over slots
 * kept in two Int32Arrays (no object per client but the key string itself).
 */
export class MemoryTable implements BoundStore {
  readonly sync = true;
  readonly ownClock = false;
  /** slots — key → slot; size() <= maxKeys. */
  private readonly slots = new Map<string, number>();
  /** keys — slot → key, for eviction. */
  private keys: string[] = [];
  /** slab — the rules' state, `stride` numbers per slot; all zero is a fresh client. */
  private slab: Float64Array;
  private logs: (Log | undefined)[] = [];
  /** newer, older — the LRU list: `mru` is the most recently used slot, `lru` the next to evict. */
  private newer: Int32Array;
  private older: Int32Array;
  private mru = NONE;
  private lru = NONE;
  /** overridden — blocks and exemptions by key; an expired one is removed when next seen. */
  private readonly overridden = new Map<string, Listed>();
  private readonly stride: number;
  /** zero — the state of a client not in the table, for looks that store nothing (cost 0). */
  private readonly zero: Float64Array;

  constructor(readonly policy: Policy, readonly maxKeys: number) {
    this.stride = policy.stateSize;
    const cap = Math.min(maxKeys, 1024);
    this.slab = new Float64Array(cap * this.stride);
    this.newer = new Int32Array(cap);
    this.older = new Int32Array(cap);
    this.zero = new Float64Array(Math.max(1, this.stride));
  }

  /** size — clients tracked now. */
  get size(): number {
    return this.slots.size;
  }

  evaluate(key: string, cost: number, now: number | undefined): Decision {
    const t = now as number;
    let override: Override | undefined;
    if (this.overridden.size > 0) override = this.live(key, t);
    let slot = this.slots.get(key);
    if (slot === undefined) {
      if (cost === 0) {
        this.zero.fill(0);
        return this.policy.evaluate(this.zero, 0, this.policy.newLog(), t, 0, override);
      }
      slot = this.insert(key);
    } else if (slot !== this.mru) {
      this.touch(slot);
    }
    return this.policy.evaluate(this.slab, slot * this.stride, this.logs[slot], t, cost, override);
  }

  setOverride(key: string, request: OverrideRequest, now: number | undefined): void {
    const o: Listed = { kind: request.kind, until: (now as number) + request.for, since: now as number };
    if (request.reason !== undefined) o.reason = request.reason;
    this.overridden.set(key, o);
  }

  clearOverride(key: string, kind: Override['kind']): void {
    if (this.overridden.get(key)?.kind === kind) this.overridden.delete(key);
  }

  reset(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slab.fill(0, slot * this.stride, (slot + 1) * this.stride);
    this.logs[slot] = this.policy.newLog();
  }

  /** clear — forgets every client and override. */
  clear(): void {
    this.slots.clear();
    this.overridden.clear();
    this.keys = [];
    this.logs = [];
    this.slab.fill(0);
    this.mru = this.lru = NONE;
  }

  // Observation: listing the blocks and exemptions (the operators' view).

  /** overrides — every block and exemption in force at `now` (ms); expired ones are removed. */
  overrides(now: number | undefined): OverrideEntry[] {
    const out: OverrideEntry[] = [];
    for (const [key, o] of this.overridden) {
      if (o.until <= (now as number)) {
        this.overridden.delete(key);
        continue;
      }
      out.push(entry(key, o));
    }
    return out;
  }

  /** override — `key`'s block or exemption in force at `now` (ms), if any. */
  override(key: string, now: number | undefined): OverrideEntry | undefined {
    const o = this.live(key, now as number);
    return o === undefined ? undefined : entry(key, o);
  }

  private live(key: string, now: number): Listed | undefined {
    const o = this.overridden.get(key);
    if (o !== undefined && o.until <= now) {
      this.overridden.delete(key);
      return undefined;
    }
    return o;
  }

  /** insert — a slot for a new key: the next free one, or the least recently used one's, wiped. */
  private insert(key: string): number {
    let slot = this.slots.size;
    if (slot >= this.maxKeys) {
      slot = this.lru;
      this.unlink(slot);
      this.slots.delete(this.keys[slot]);
      this.slab.fill(0, slot * this.stride, (slot + 1) * this.stride);
    } else if (slot >= this.newer.length) {
      this.grow();
    }
    this.slots.set(key, slot);
    this.keys[slot] = key;
    this.logs[slot] = this.policy.newLog();
    this.pushFront(slot);
    return slot;
  }

  private touch(slot: number): void {
    this.unlink(slot);
    this.pushFront(slot);
  }

  private unlink(slot: number): void {
    const n = this.newer[slot];
    const o = this.older[slot];
    if (n === NONE) this.mru = o;
    else this.older[n] = o;
    if (o === NONE) this.lru = n;
    else this.newer[o] = n;
  }

  private pushFront(slot: number): void {
    this.newer[slot] = NONE;
    this.older[slot] = this.mru;
    if (this.mru !== NONE) this.newer[this.mru] = slot;
    this.mru = slot;
    if (this.lru === NONE) this.lru = slot;
  }

  private grow(): void {
    const cap = Math.min(this.maxKeys, this.newer.length * 2);
    const slab = new Float64Array(cap * this.stride);
    slab.set(this.slab);
    this.slab = slab;
    const newer = new Int32Array(cap);
    newer.set(this.newer);
    this.newer = newer;
    const older = new Int32Array(cap);
    older.set(this.older);
    this.older = older;
  }
}

/** memoryStore — the embedded default store. @example limiter({ rules, store: memoryStore({ maxKeys: 100_000 }) }) */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options);
}
