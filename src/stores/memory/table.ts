/**
 * stores/memory/table — MemoryTable, the memory store bound to one policy: decides a client's request on its slot
 * (Policy.evaluate over the slab, the slot's log opened and closed around it), moves it on the LRU lists, keeps its
 * blocks and exemptions (overrides.ts) and carries the clients over to a compatible policy (adopt). Where the
 * clients live and which one is evicted: slots.ts.
 */
import type { Decision, Override } from '../../core/types.js';
import type { Policy } from '../../core/policy.js';
import { Log } from '../../core/algorithms/slidingLog.js';
import type { BoundStore, OverrideEntry, OverrideRequest } from '../types.js';
import { BIG, INLINE, NORMAL, PENALTY, Slots } from './slots.js';
import { Overrides, entry, type Listed } from './overrides.js';

/**
 * MemoryTable — the clients of one policy (see {@link Slots} for their storage and eviction): no object per client
 * but its key string, no timer, nothing in the background.
 */
export class MemoryTable extends Slots implements BoundStore {
  readonly sync = true;
  readonly ownClock = false;
  /** ov — the operator's blocks and exemptions and the automatic blocks, each at most maxKeys. */
  private readonly ov: Overrides;
  /** log — the one Log object, pointed at the slot being decided. */
  private readonly log: Log | undefined;
  /** zero — the state of a client not in the table, for looks that store nothing (cost 0). */
  private readonly zero: Float64Array;

  /** policy — what the clients are judged by; replaced only by adopt(), with every slot converted. */
  policy: Policy;

  constructor(policy: Policy, maxKeys: number) {
    super(maxKeys, policy.stateSize + (policy.hasLog ? 1 + 2 * INLINE : 0), policy.hasLog ? policy.stateSize : -1);
    this.policy = policy;
    this.ov = new Overrides(maxKeys);
    this.log = policy.hasLog ? new Log(INLINE) : undefined;
    this.zero = new Float64Array(Math.max(1, this.stride));
  }

  /** overrideCount — the operator's blocks and exemptions held now (expired ones included until swept): at most maxKeys. */
  get overrideCount(): number {
    return this.ov.count;
  }

  /** autoBlockCount — automatic blocks held now (expired ones included until swept): at most maxKeys. */
  get autoBlockCount(): number {
    return this.ov.autoCount;
  }

  /** evaluate — see BoundStore; `veto`: another part of a compound request refused it (Policy.evaluate). */
  evaluate(key: string, cost: number, now: number | undefined, veto?: boolean): Decision {
    const t = now as number;
    let override: Override | undefined;
    if (this.ov.any) override = this.ov.live(key, t);
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
    if (override === undefined && this.policy.autoBlocks(d, cost)) this.ov.auto(key, t, this.policy.blockFor, this.policy.autoBlocked(d));
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
    const override = this.ov.any ? this.ov.live(key, now) : undefined;
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
    this.ov.set(key, request, now as number);
  }

  clearOverride(key: string, kind: Override['kind']): void {
    this.ov.clear(key, kind);
  }

  reset(key: string): void {
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.wipe(slot);
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
    return this.slots.size === 0 && !this.ov.any;
  }

  /** clear — forgets every client and override. */
  clear(): void {
    this.forget();
    this.ov.clearAll();
  }

  // Observation: listing the blocks and exemptions (the operators' view).

  /** overrides — every block and exemption in force at `now` (ms); expired ones are removed. */
  overrides(now: number | undefined): OverrideEntry[] {
    return this.ov.list(now as number);
  }

  /** override — `key`'s block or exemption in force at `now` (ms), if any. */
  override(key: string, now: number | undefined): OverrideEntry | undefined {
    const o: Listed | undefined = this.ov.live(key, now as number);
    return o === undefined ? undefined : entry(key, o);
  }

  /** over — whether the penalty of the client in `slot` is over: every rule would admit a request of cost 1 now. */
  protected over(slot: number, now: number): boolean {
    const o = slot * this.stride;
    return this.policy.verdict(this.slab, o, this.openLog(this.slab, o, slot), now, 1);
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
}
