import type { Decision, Override } from '../core/types.js';
import type { Policy } from '../core/policy.js';
import { Log } from '../core/algorithms/slidingLog.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptions } from '../core/options.js';
import type { BoundStore, OverrideEntry, OverrideRequest, Part, Store } from './types.js';

/** MemoryStoreOptions — the embedded store's bounds. */
export interface MemoryStoreOptions {
  /**
   * maxKeys — the most clients tracked per limiter; also, separately, the most blocks and exemptions an operator may
   * set per limiter (past it `block`/`exempt` of a new key throws, nothing is lifted), and the most automatic blocks
   * (`autoBlock`) held per limiter (past it the oldest one ends early). Past it a client is
   * forgotten: the least recently used one of those not in penalty (as the EARRRL document asks: an LRU, not a TTL,
   * so an active offender is never forgotten while it stays active), and one in penalty only when every tracked
   * client is. About 100 bytes a client for one-number algorithms (docs/memory.md gives the figure per algorithm):
   * 100 000 clients fit in ~10–25 MB.
   * @default 100_000
   */
  maxKeys?: number;
}

const MEMORY_STORE_OPTIONS: ReadonlySet<string> = new Set(['maxKeys']);

/**
 * MemoryStore — the embedded default: per limiter, a bounded table of clients. No timer per key and nothing in
 * the background: a client's state is only dropped when the table is full (see {@link MemoryTable}).
 */
export class MemoryStore implements Store {
  readonly maxKeys: number;
  /** tables — one per attached policy. */
  private readonly tables = new Map<Policy, MemoryTable>();

  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`memoryStore takes an options object like { maxKeys: 100_000 }, got ${show(options)}`);
    checkOptions(options, MEMORY_STORE_OPTIONS, 'memoryStore');
    const max = options.maxKeys ?? 100_000;
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
   * succeed — hands the table of `from` (a policy a limiter is being replaced from) to `to` when the two are
   * compatible (Policy.compatible): every client's state is converted at `now` (eagerly, one pass over the slab:
   * MemoryTable.adopt), and its blocks and exemptions stay. Returns undefined when there is no such table or the
   * policies are not compatible (the caller attaches `to` fresh).
   */
  succeed(from: Policy, to: Policy, now: number): MemoryTable | undefined {
    const t = this.tables.get(from);
    const mine = this.tables.get(to);
    // `to` may have a table already (its limiter was built before it took over), as long as nothing was put in it
    if (t === undefined || from === to || (mine !== undefined && !mine.empty) || !to.compatible(from)) return undefined;
    t.adopt(to, now);
    this.tables.delete(from);
    this.tables.set(to, t);
    return t;
  }

  /** detach — forgets the table of a policy no limiter uses any more (the service's replaced limits), and its clients. */
  detach(policy: Policy): void {
    this.tables.get(policy)?.clear();
    this.tables.delete(policy);
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

/** INLINE — log entries kept in a client's slot; a longer log gets an array of its own (and comes back when short). */
const INLINE = 3;
/** BIG — logMeta of a slot whose log has a Log of its own (in bigLogs); otherwise logMeta is head·4 + size. */
const BIG = 255;
/**
 * PENALTY_LOOK — how many of the least recently used clients in penalty an insert into a full table looks at for one
 * whose penalty is over (each look is one verdict of the rules: bounded, so a flood of fresh keys into a table of
 * penalties costs at most this many per new key).
 */
const PENALTY_LOOK = 16;

/** NORMAL, PENALTY — the two LRU lists: clients whose last decision admitted them, and those it refused. */
const NORMAL = 0;
const PENALTY = 1;
/** FIRST_SLOTS — client slots allocated at a table's first client (none before), then doubled as clients come. */
const FIRST_SLOTS = 16;
/** SWEEP — expired overrides looked for per override set: enough to reclaim them faster than they are made. */
const SWEEP = 2;

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
 * MemoryTable — the clients of one policy: a Map from key to slot, the state of slot i at slab[i·stride …
 * (i+1)·stride) (the rules' numbers, then for slidingLog rules the log's header and its first INLINE entries),
 * a log array only for clients whose log is longer than that, and two doubly linked LRU lists over slots kept in
 * Int32Arrays (no object per client but the key string itself).
 *
 * Eviction, when the table is full: a client whose last decision refused it is in penalty (until a request of cost 1
 * would pass) and sits on the PENALTY list; everyone else on the NORMAL list. A new client takes the slot of, in this order: a
 * penalty client whose penalty is over (the first found among the PENALTY_LOOK least recently used), the least
 * recently used normal client, the least recently used penalty client. So a flood of fresh keys never wipes a penalty while the table holds anyone else,
 * and each insert does O(1) work.
 */
export class MemoryTable implements BoundStore {
  readonly sync = true;
  readonly ownClock = false;
  /** slots — key → slot; size() <= maxKeys. */
  private readonly slots = new Map<string, number>();
  /** keys — slot → key, for eviction. */
  private keys: string[] = [];
  /** slab — the clients' state, `stride` numbers per slot; all zero is a fresh client. */
  private slab: Float64Array;
  /** newer, older — the LRU lists' links; list[slot] says which list a slot is on (NORMAL or PENALTY). */
  private newer: Int32Array;
  private older: Int32Array;
  private list: Uint8Array;
  /** mru, lru — per list, the most recently used slot and the next to evict (NONE when the list is empty). */
  private readonly mru = new Int32Array([NONE, NONE]);
  private readonly lru = new Int32Array([NONE, NONE]);
  /**
   * overridden — the operator's blocks and exemptions by key, in the order they were set (or last swept): at most
   * maxKeys, never evicted (past it a new one is refused with an error). Each set looks at the SWEEP oldest ones and
   * removes those expired (moving the others to the back), so expired ones are reclaimed without timers; an expired
   * one is also removed when its key is checked.
   */
  private readonly overridden = new Map<string, Listed>();
  /**
   * automatic — the automatic blocks (policy.autoBlock) by key, in the order they were set, which is the order they
   * end (one duration per policy): at most maxKeys, a budget of their own, so they never push out an operator's; at
   * the bound the oldest one ends early. A key is in at most one of `overridden` and `automatic`.
   */
  private readonly automatic = new Map<string, Listed>();
  private readonly stride: number;
  /** logAt — where a slot's log header starts within its stride (−1: the policy has no slidingLog rule). */
  private readonly logAt: number;
  /** logMeta — per slot, its log's head·4 + size when inline (the base is the slot's first log number), or BIG. */
  private logMeta: Uint8Array;
  /** bigLogs — slot → the Log of a log longer than INLINE entries (a ring of its own) where logMeta[slot] is BIG. */
  private bigLogs: (Log | undefined)[] = [];
  /** log — the one Log object, pointed at the slot being decided. */
  private readonly log: Log | undefined;
  /** zero — the state of a client not in the table, for looks that store nothing (cost 0). */
  private readonly zero: Float64Array;

  /** policy — what the clients are judged by; replaced only by adopt(), with every slot converted. */
  policy: Policy;

  constructor(policy: Policy, readonly maxKeys: number) {
    this.policy = policy;
    this.logAt = policy.hasLog ? policy.stateSize : -1;
    this.stride = policy.stateSize + (policy.hasLog ? 1 + 2 * INLINE : 0);
    this.log = policy.hasLog ? new Log(INLINE) : undefined;
    // nothing for clients until the first one comes (a service with many limits, most of them idle), then doubling
    const cap = 0;
    this.slab = new Float64Array(cap * this.stride);
    this.newer = new Int32Array(cap);
    this.older = new Int32Array(cap);
    this.list = new Uint8Array(cap);
    this.logMeta = new Uint8Array(policy.hasLog ? cap : 0);
    this.zero = new Float64Array(Math.max(1, this.stride));
  }

  /** size — clients tracked now. */
  get size(): number {
    return this.slots.size;
  }

  /** overrideCount — the operator's blocks and exemptions held now (expired ones included until swept): at most maxKeys. */
  get overrideCount(): number {
    return this.overridden.size;
  }

  /** autoBlockCount — automatic blocks held now (expired ones included until swept): at most maxKeys. */
  get autoBlockCount(): number {
    return this.automatic.size;
  }

  /** evaluate — see BoundStore; `veto`: another part of a compound request refused it (Policy.evaluate). */
  evaluate(key: string, cost: number, now: number | undefined, veto?: boolean): Decision {
    const t = now as number;
    let override: Override | undefined;
    if (this.overridden.size > 0 || this.automatic.size > 0) override = this.live(key, t);
    let slot = this.slots.get(key);
    if (slot === undefined) {
      if (cost === 0) {
        this.zero.fill(0);
        return this.policy.evaluate(this.zero, 0, this.openLog(this.zero, 0, -1), t, 0, override);
      }
      slot = this.insert(key, t);
    }
    const o = slot * this.stride;
    let d: Decision;
    if (this.logAt < 0) {
      d = this.policy.evaluate(this.slab, o, undefined, t, cost, override, veto);
    } else {
      const log = this.openLog(this.slab, o, slot) as Log;
      d = this.policy.evaluate(this.slab, o, log, t, cost, override, veto);
      this.closeLog(o, slot, log);
    }
    if (override === undefined && this.policy.autoBlocks(d, cost)) this.autoBlock(key, t, d);
    // the LRU move, onto the list this decision puts the client on
    const to = d.allowed || d.reason !== 'limited' ? NORMAL : PENALTY;
    if (this.mru[to] !== slot || this.list[slot] !== to) {
      this.unlink(slot);
      this.pushFront(slot, to);
    }
    return d;
  }

  /** verdict — whether `evaluate` would answer `allowed: true`, charging and storing nothing. */
  verdict(key: string, cost: number, now: number): boolean {
    const override = this.overridden.size > 0 || this.automatic.size > 0 ? this.live(key, now) : undefined;
    const slot = this.slots.get(key);
    if (slot === undefined) {
      this.zero.fill(0);
      return this.policy.verdict(this.zero, 0, this.openLog(this.zero, 0, -1), now, cost, override);
    }
    const o = slot * this.stride;
    return this.policy.verdict(this.slab, o, this.logAt < 0 ? undefined : this.openLog(this.slab, o, slot), now, cost, override);
  }

  /** refund — gives back `cost` of the client's state (Policy.refund), then reports it as a cost-0 look would. */
  refund(key: string, cost: number, now: number | undefined, leakyOnly: boolean): Decision {
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      const o = slot * this.stride;
      if (this.logAt < 0) {
        this.policy.refund(this.slab, o, undefined, now as number, cost, leakyOnly);
      } else {
        const log = this.openLog(this.slab, o, slot) as Log;
        this.policy.refund(this.slab, o, log, now as number, cost, leakyOnly);
        this.closeLog(o, slot, log);
      }
    }
    return this.evaluate(key, 0, now);
  }

  /**
   * setOverride — an operator's block or exemption (replacing the key's own, manual or automatic). When maxKeys of
   * them are in force already, a new key's is refused with an error naming the bound: nothing is lifted to make room.
   */
  setOverride(key: string, request: OverrideRequest, now: number | undefined): void {
    const t = now as number;
    const o: Listed = { kind: request.kind, until: t + request.for, since: t };
    if (request.reason !== undefined) o.reason = request.reason;
    const had = this.overridden.delete(key);
    this.sweep(t);
    if (!had && this.overridden.size >= this.maxKeys) {
      // every one may be live but the SWEEP oldest: look at them all once before refusing
      for (const [k, v] of this.overridden) if (v.until <= t) this.overridden.delete(k);
      if (this.overridden.size >= this.maxKeys) {
        throw new RatekeeperError(
          `the memory store holds ${this.maxKeys} blocks and exemptions set by an operator for this limiter (memoryStore maxKeys), all in force: lift one (unblock, unexempt) or raise maxKeys; none was lifted to make room for ${show(key)}`,
          'ERR_ARGUMENT',
        );
      }
    }
    this.automatic.delete(key);
    this.overridden.set(key, o);
  }

  clearOverride(key: string, kind: Override['kind']): void {
    if (this.overridden.get(key)?.kind === kind) this.overridden.delete(key);
    else if (kind === 'block') this.automatic.delete(key);
  }

  /**
   * autoBlock — starts the automatic block of `key` (no block or exemption in force) at `now` after decision `d`
   * refused it (Policy.autoBlocked sets its retryAfter), in its own budget: the ended ones at the front are dropped,
   * and at maxKeys the oldest ends early.
   */
  private autoBlock(key: string, now: number, d: Decision): void {
    const reason = this.policy.autoBlocked(d);
    const auto = this.automatic;
    auto.delete(key);
    for (let i = 0; i < SWEEP && auto.size > 0; i++) {
      const [k, v] = auto.entries().next().value as [string, Listed];
      if (v.until > now) break;
      auto.delete(k);
    }
    if (auto.size >= this.maxKeys) auto.delete(auto.keys().next().value as string);
    auto.set(key, { kind: 'block', until: now + this.policy.blockFor, since: now, reason });
  }

  reset(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slab.fill(0, slot * this.stride, (slot + 1) * this.stride);
    if (this.logAt >= 0) this.logMeta[slot] = 0;
    this.bigLogs[slot] = undefined;
  }

  /**
   * adopt — puts the table under `to`, a policy compatible with its own (Policy.compatible: same layout), converting
   * every client's state at `now` in one pass (Policy.adopt). Eager rather than on each client's next check: the
   * conversion needs the old rules and the time of the change (a GCRA TAT and a bucket's drain are converted at
   * that instant), which a lazy one would have to keep per client; one pass costs about 80 ns a client on one
   * rule (100 000 gcra clients: 7.8 ms, docs/memory.md). Blocks and exemptions are kept as they are.
   */
  adopt(to: Policy, now: number): void {
    const from = this.policy;
    const stride = this.stride;
    for (let slot = 0, n = this.slots.size; slot < n; slot++) to.adopt(from, this.slab, slot * stride, now);
    this.policy = to;
  }

  /** empty — no client and no override has been put in this table (or it was cleared). */
  get empty(): boolean {
    return this.slots.size === 0 && this.overridden.size === 0 && this.automatic.size === 0;
  }

  /** clear — forgets every client and override. */
  clear(): void {
    this.slots.clear();
    this.overridden.clear();
    this.automatic.clear();
    this.bigLogs = [];
    this.keys = [];
    this.slab.fill(0);
    this.logMeta.fill(0);
    this.mru.fill(NONE);
    this.lru.fill(NONE);
  }

  // Observation: listing the blocks and exemptions (the operators' view).

  /** overrides — every block and exemption in force at `now` (ms); expired ones are removed. */
  overrides(now: number | undefined): OverrideEntry[] {
    const out: OverrideEntry[] = [];
    for (const map of [this.overridden, this.automatic]) {
      for (const [key, o] of map) {
        if (o.until <= (now as number)) {
          map.delete(key);
          continue;
        }
        out.push(entry(key, o));
      }
    }
    return out;
  }

  /** override — `key`'s block or exemption in force at `now` (ms), if any. */
  override(key: string, now: number | undefined): OverrideEntry | undefined {
    const o = this.live(key, now as number);
    return o === undefined ? undefined : entry(key, o);
  }

  /** live — `key`'s block or exemption in force at `now` (the operator's, else an automatic block); an ended one is removed. */
  private live(key: string, now: number): Listed | undefined {
    const map = this.overridden.has(key) ? this.overridden : this.automatic;
    const o = map.get(key);
    if (o !== undefined && o.until <= now) {
      map.delete(key);
      return undefined;
    }
    return o;
  }

  /** sweep — removes the expired ones among the SWEEP oldest overrides, moving the live ones to the back. */
  private sweep(now: number): void {
    for (let i = 0; i < SWEEP && this.overridden.size > 0; i++) {
      const [key, o] = this.overridden.entries().next().value as [string, Listed];
      this.overridden.delete(key);
      if (o.until > now) this.overridden.set(key, o);
    }
  }

  /** openLog — the log of `slot` (−1: a client not in the table, whose state is `zero`), ready for one decision. */
  private openLog(s: Float64Array, o: number, slot: number): Log | undefined {
    const log = this.log;
    if (log === undefined) return undefined;
    const meta = slot < 0 ? 0 : this.logMeta[slot];
    if (meta === BIG) return this.bigLogs[slot] as Log;
    const h = o + this.logAt;
    log.view(s, h + 1, INLINE, meta >> 2, meta & 3, s[h]);
    return log;
  }

  /**
   * closeLog — after a decision, stores `slot`'s log back: an inline log's base and head/size into the slot; a log
   * that outgrew the slot becomes a Log of its own (in bigLogs); a big log that is short again moves back inline.
   */
  private closeLog(o: number, slot: number, log: Log): void {
    const s = this.slab;
    const h = o + this.logAt;
    if (log !== this.log) {
      if (log.size > INLINE) return;
      log.copyTo(s, h + 1);
      s[h] = log.base;
      this.logMeta[slot] = log.size;
      this.bigLogs[slot] = undefined;
      return;
    }
    if (log.buf !== s) {
      const big = new Log(0);
      big.view(log.buf, 0, log.cap, log.head, log.size, log.base);
      this.bigLogs[slot] = big;
      this.logMeta[slot] = BIG;
      return;
    }
    s[h] = log.base;
    this.logMeta[slot] = (log.head << 2) | log.size;
  }

  /**
   * insert — a slot for a new key, on the NORMAL list: the next free one, or when the table is full the slot of
   * `victim` — wiped.
   */
  private insert(key: string, now: number): number {
    let slot = this.slots.size;
    if (slot >= this.maxKeys) {
      slot = this.victim(now);
      this.unlink(slot);
      this.slots.delete(this.keys[slot]);
      this.slab.fill(0, slot * this.stride, (slot + 1) * this.stride);
      if (this.logAt >= 0) this.logMeta[slot] = 0;
      if (this.logAt >= 0) this.bigLogs[slot] = undefined;
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

  /** over — whether the penalty of the client in `slot` is over: every rule would admit a request of cost 1 now. */
  private over(slot: number, now: number): boolean {
    const o = slot * this.stride;
    return this.policy.verdict(this.slab, o, this.openLog(this.slab, o, slot), now, 1);
  }

  private unlink(slot: number): void {
    const l = this.list[slot];
    const n = this.newer[slot];
    const o = this.older[slot];
    if (n === NONE) this.mru[l] = o;
    else this.older[n] = o;
    if (o === NONE) this.lru[l] = n;
    else this.newer[o] = n;
  }

  private pushFront(slot: number, l: number): void {
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

/** memoryStore — the embedded default store. @example limiter({ rules, store: memoryStore({ maxKeys: 100_000 }) }) */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options);
}
