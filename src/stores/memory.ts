/**
 * stores/memory — the embedded default store's public face: its options, one table per attached policy (a
 * MemoryTable: memory/table.ts, its clients' storage and eviction in memory/slots.ts, its blocks and exemptions in
 * memory/overrides.ts), a succession handing a table to a compatible policy, and compound requests decided exactly.
 */
import type { Decision } from '../core/types.js';
import type { Policy } from '../core/policy.js';
import { RatekeeperError, show } from '../core/errors.js';
import { checkOptions } from '../core/options.js';
import type { Part, Store } from './types.js';
import { MemoryTable } from './memory/table.js';

export { MemoryTable } from './memory/table.js';

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

/** memoryStore — the embedded default store. @example limiter({ rules, store: memoryStore({ maxKeys: 100_000 }) }) */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  return new MemoryStore(options);
}
