/**
 * batch — hot keys coalesced, still exact (issue 19 part 1): the plain checks of one Redis key (one client of one
 * policy) that wait in the same tick go to Redis as one script call (batchScript) that applies them in arrival order
 * and answers each with the reply a single check would get. A key with one check in the tick is sent as today (one
 * CheckCall). Each check keeps its cost and explicit `now`; checks on the server's clock share the one TIME the batch
 * reads. Anything else on the store (a refund, a compound check, an override, a reset) flushes the pending batches
 * first, so order is kept. A batch is capped at MAX_BATCH checks (a longer run is split into several calls, in order).
 */
import type { Decision } from '../../core/types.js';
import { Call, StoreUnavailableError, learnOffset, type Budget, type Calls } from './call.js';
import { CheckCall, answerCheck, type BatchSink, type RedisBound } from './bound.js';

/**
 * MAX_BATCH — the most checks one batch script call carries. A batch that reaches it leaves at once, not at the
 * tick's end: Redis starts on it while the rest of the tick is still being decided, and its replies come back while
 * the next part is on its way (with 256 checks of one key in flight: 0.55 M checks/s against 0.36 M for one batch of
 * 256 leaving at the tick's end, docs/fleet.md). It also bounds the script's ARGV, its reply and the time one call
 * holds Redis.
 */
export const MAX_BATCH = 64;

/** Entry — one check waiting in a batch. */
interface Entry {
  readonly key: string;
  readonly cost: number;
  readonly now: number | undefined;
  readonly resolve: (d: Decision) => void;
}

/** BatchStats — what the operators see: batch script calls sent and the checks they carried. */
export interface BatchStats {
  batches: number;
  checks: number;
  largest: number;
}

/** Pending — one key's batch of this tick, not sent yet. */
interface Pending {
  readonly id: string;
  readonly redisKey: string;
  readonly bound: RedisBound;
  readonly budget: Budget;
  readonly at: number;
  readonly entries: Entry[];
}

/** Batcher — the checks of this tick by Redis key; flushed at the end of the tick (or when something else is sent). */
export class Batcher implements BatchSink {
  private pending = new Map<string, Pending>();
  /** last — the batch the previous check joined (a hot key's next check joins it without building its id). */
  private last: Pending | undefined;
  private scheduled = false;
  /** waiting — the calls of this tick not sent yet, per server budget (counted against maxPending with the ones sent). */
  private readonly waiting = new Map<Budget, number>();
  readonly stats: BatchStats = { batches: 0, checks: 0, largest: 0 };

  constructor(private readonly calls: Calls, private readonly cork: () => void) {}

  add(bound: RedisBound, redisKey: string, budget: Budget, key: string, cost: number, now: number | undefined, resolve: (d: Decision) => void): void {
    let b = this.last;
    if (b === undefined || b.bound !== bound || b.redisKey !== redisKey) {
      const id = redisKey + '\u0000' + bound.tupleId;
      b = this.pending.get(id);
      if (b === undefined) {
        // a new call of this tick counts against its server's maxPending as soon as it waits (as a single check's does)
        const waiting = this.waiting.get(budget) ?? 0;
        if (budget.pending + waiting >= this.calls.maxPending) {
          resolve(bound.failed(new StoreUnavailableError(`${budget.pending + waiting} commands are pending on ${budget.node} (maxPending)`), key, cost, now));
          return;
        }
        this.waiting.set(budget, waiting + 1);
        b = { id, redisKey, bound, budget, at: performance.now() + this.calls.timeout, entries: [] };
        this.pending.set(id, b);
      }
      this.last = b;
    }
    b.entries.push({ key, cost, now, resolve });
    if (b.entries.length >= MAX_BATCH) {
      // full: it leaves now, so that Redis starts on it while this tick goes on
      this.pending.delete(b.id);
      this.last = undefined;
      this.unwait(budget);
      this.send(b);
    }
    if (!this.scheduled) {
      // sent after this turn of the event loop's I/O callbacks, not at the end of this one: a server receives each
      // request in its own callback, and its checks of one key coalesce only if they wait for the others of the turn
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** flush — sends every pending batch (in the order their keys first arrived). */
  readonly flush = (): void => {
    this.scheduled = false;
    this.last = undefined;
    if (this.pending.size === 0) return;
    const all = this.pending;
    this.pending = new Map();
    this.waiting.clear();
    this.cork();
    for (const b of all.values()) this.send(b);
  };

  private unwait(budget: Budget): void {
    const n = this.waiting.get(budget) ?? 0;
    if (n <= 1) this.waiting.delete(budget);
    else this.waiting.set(budget, n - 1);
  }

  private send(b: Pending): void {
    const { redisKey, bound, budget, at, entries } = b;
    if (entries.length === 1) {
      const e = entries[0];
      this.calls.start(new CheckCall(bound, redisKey, e.key, e.cost, e.now, at, budget, e.resolve));
      return;
    }
    this.stats.batches++;
    this.stats.checks += entries.length;
    if (entries.length > this.stats.largest) this.stats.largest = entries.length;
    this.calls.start(new BatchCall(bound, redisKey, entries, at, budget, this.calls));
  }
}

/** BatchCall — one batch in flight: each check answered from its own reply, or all by the failure policy. */
class BatchCall extends Call {
  constructor(
    readonly bound: RedisBound, readonly redisKey: string, private entries: Entry[], at: number, budget: Budget, private readonly calls: Calls,
  ) {
    super(budget, at, entries.some((e) => e.cost !== 0));
  }

  send(text: boolean): Promise<unknown> {
    const b = this.bound;
    const script = b.batch;
    const entries = this.entries;
    const deadline = this.calls.deadline(this);
    const cost = entries[0].cost;
    let same = true;
    for (const e of entries) if (e.now !== undefined || e.cost !== cost) same = false;
    // a run of one cost on the server's clock (a hot key's usual batch): its count, not a pair per check
    const args = same ? [deadline, '*', String(entries.length), String(cost)] : [deadline];
    if (!same) for (const e of entries) args.push(e.now === undefined ? '' : String(e.now), String(e.cost));
    // the checks' road (wire.ts): callBuffer loses the command's name under ioredis's enableAutoPipelining
    return b.store.batchBuffer(text, script, this.redisKey, args);
  }

  override seen(reply: unknown): void {
    // the checks of a batch share its one read of the server's clock, the first double of its second string
    const meta = Array.isArray(reply) ? (reply[1] as unknown) : undefined;
    if (meta instanceof Buffer && meta.length >= 8) learnOffset(this.budget, meta.readDoubleLE(0), performance.now());
  }

  answer(v: unknown): void {
    const entries = this.release();
    const b = this.bound;
    const data = Array.isArray(v) ? (v[0] as unknown) : undefined;
    const meta = Array.isArray(v) ? (v[1] as unknown) : undefined;
    if (!(data instanceof Buffer) || !(meta instanceof Buffer)) {
      const e = new StoreUnavailableError('unreadable batch reply: not the two strings of a batch');
      for (const x of entries) x.resolve(b.failed(e, x.key, x.cost, x.now));
      return;
    }
    // each check's reply in turn: a plain one is replyBytes long, a block's or exemption's length is the next in meta
    const size = b.reply.replyBytes;
    let at = 0;
    let odd = 8;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      let end = -1;
      if (at + 8 <= data.length) {
        if (data.readDoubleLE(at) < 2) end = at + size;
        else if (odd + 8 <= meta.length) {
          end = at + meta.readDoubleLE(odd);
          odd += 8;
        }
      }
      if (!(end > at && end <= data.length)) {
        // a reply shorter than its checks (not this script's): the checks it does not hold get the failure policy
        const err = new StoreUnavailableError('unreadable batch reply: shorter than its checks');
        for (let j = i; j < entries.length; j++) entries[j].resolve(b.failed(err, entries[j].key, entries[j].cost, entries[j].now));
        return;
      }
      answerCheck(b, e.key, e.cost, e.now, data, at, end, e.resolve);
      at = end;
    }
  }

  fail(e: Error): void {
    for (const x of this.release()) x.resolve(this.bound.failed(e, x.key, x.cost, x.now));
  }

  /**
   * release — the checks, handed over once the call settles and forgotten by it: the store's deadline queue keeps
   * settled calls a while (call.ts pops them lazily, up to ~1 000), and through their resolves every promise and
   * Decision of those batches stayed alive, long enough to be promoted out of the young generation.
   */
  private release(): Entry[] {
    const entries = this.entries;
    this.entries = [];
    return entries;
  }
}
