import type { Decision, Override } from '../core/types.js';
import type { Policy } from '../core/policy.js';
import type { Log } from '../core/algorithms/slidingLog.js';
import { RatekeeperError, show } from '../core/errors.js';
import type { BoundStore, OverrideRequest, Part, Store } from './types.js';

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

  /**
   * evaluateAll — the parts decided all-or-nothing, exactly and synchronously: the verdicts of all parts but the last
   * on their stored state (nothing charged), then the last part decided for real (vetoed if an earlier one refused),
   * then the others, vetoed unless every verdict admitted. The parts must name distinct states (checkAll merges
   * duplicates), so that each verdict still holds when the others are charged.
   */
  evaluateAll(parts: readonly Part[], now: number | undefined): Decision[] {
    const n = parts.length;
    let all = true;
    for (let i = 0; i < n - 1 && all; i++) {
      const p = parts[i];
      all = (p.bound as MemoryTable).verdict(p.key, p.cost, now as number);
    }
    const decisions = new Array<Decision>(n);
    const last = parts[n - 1];
    const d = (last.bound as MemoryTable).evaluate(last.key, last.cost, now, !all);
    decisions[n - 1] = d;
    if (!d.allowed) all = false;
    for (let i = 0; i < n - 1; i++) {
      const p = parts[i];
      decisions[i] = (p.bound as MemoryTable).evaluate(p.key, p.cost, now, !all);
    }
    return decisions;
  }
}

const NONE = -1;

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
  /** overrides — blocks and exemptions by key; an expired one is removed when next seen. */
  private readonly overrides = new Map<string, Override>();
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

  /** evaluate — see BoundStore; `veto`: another part of a compound request refused it (Policy.evaluate). */
  evaluate(key: string, cost: number, now: number | undefined, veto?: boolean): Decision {
    const t = now as number;
    let override: Override | undefined;
    if (this.overrides.size > 0) override = this.override(key, t);
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
    return this.policy.evaluate(this.slab, slot * this.stride, this.logs[slot], t, cost, override, veto);
  }

  /** verdict — whether `evaluate` would answer `allowed: true`, charging and storing nothing. */
  verdict(key: string, cost: number, now: number): boolean {
    const override = this.overrides.size > 0 ? this.override(key, now) : undefined;
    const slot = this.slots.get(key);
    if (slot === undefined) {
      this.zero.fill(0);
      return this.policy.verdict(this.zero, 0, this.policy.newLog(), now, cost, override);
    }
    return this.policy.verdict(this.slab, slot * this.stride, this.logs[slot], now, cost, override);
  }

  refund(key: string, cost: number, now: number | undefined, leakyOnly: boolean): Decision {
    const slot = this.slots.get(key);
    if (slot !== undefined) this.policy.refund(this.slab, slot * this.stride, this.logs[slot], now as number, cost, leakyOnly);
    return this.evaluate(key, 0, now);
  }

  setOverride(key: string, request: OverrideRequest, now: number | undefined): void {
    const o: Override = { kind: request.kind, until: (now as number) + request.for };
    if (request.reason !== undefined) o.reason = request.reason;
    this.overrides.set(key, o);
  }

  clearOverride(key: string, kind: Override['kind']): void {
    if (this.overrides.get(key)?.kind === kind) this.overrides.delete(key);
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
    this.overrides.clear();
    this.keys = [];
    this.logs = [];
    this.slab.fill(0);
    this.mru = this.lru = NONE;
  }

  private override(key: string, now: number): Override | undefined {
    const o = this.overrides.get(key);
    if (o !== undefined && o.until <= now) {
      this.overrides.delete(key);
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
