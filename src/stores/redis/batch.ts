/**
 * batch — hot keys coalesced, still exact (issue 19 part 1): the plain checks of one Redis key (one client of one
 * policy) that wait in the same tick go to Redis as one script call (batchScript) that applies them in arrival order
 * and answers each with the reply a single check would get. A key with one check in the tick is sent as today (one
 * CheckCall). Each check keeps its cost and explicit `now`; checks on the server's clock share the one TIME the batch
 * reads. Anything else on the store (a refund, a compound check, an override, a reset) flushes the pending batches
 * first, so order is kept. A batch is capped at MAX_BATCH checks (a longer run is split into several calls, in order).
 */
import type { Decision } from '../../core/types.js';
import { Call, StoreUnavailableError, type Budget, type Calls } from './call.js';
import { CheckCall, type BatchSink, type RedisBound } from './bound.js';

/** MAX_BATCH — the most checks one batch script call carries (bounds its ARGV, its reply and the Lua table). */
export const MAX_BATCH = 512;

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

/** Batcher — the checks of this tick by Redis key; flushed at the end of the tick (or when something else is sent). */
export class Batcher implements BatchSink {
  private pending = new Map<string, { bound: RedisBound; budget: Budget; at: number; entries: Entry[] }>();
  private scheduled = false;
  /** waiting — the calls of this tick not sent yet, per server budget (counted against maxPending with the ones sent). */
  private readonly waiting = new Map<Budget, number>();
  readonly stats: BatchStats = { batches: 0, checks: 0, largest: 0 };

  constructor(private readonly calls: Calls, private readonly cork: () => void) {}

  add(bound: RedisBound, redisKey: string, budget: Budget, key: string, cost: number, now: number | undefined, resolve: (d: Decision) => void): void {
    const id = redisKey + '\u0000' + bound.tupleId;
    let b = this.pending.get(id);
    if (b === undefined) {
      // a new call of this tick counts against its server's maxPending as soon as it waits (as a single check's does)
      const waiting = this.waiting.get(budget) ?? 0;
      if (budget.pending + waiting >= this.calls.maxPending) {
        resolve(bound.failed(new StoreUnavailableError(`${budget.pending + waiting} commands are pending on ${budget.node} (maxPending)`), key, cost, now));
        return;
      }
      this.waiting.set(budget, waiting + 1);
      b = { bound, budget, at: performance.now() + this.calls.timeout, entries: [] };
      this.pending.set(id, b);
    }
    b.entries.push({ key, cost, now, resolve });
    if (b.entries.length >= MAX_BATCH) {
      this.pending.delete(id);
      this.unwait(budget);
      this.send(redisKey, b);
    }
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(this.flush);
    }
  }

  /** flush — sends every pending batch (in the order their keys first arrived). */
  readonly flush = (): void => {
    this.scheduled = false;
    if (this.pending.size === 0) return;
    const all = this.pending;
    this.pending = new Map();
    this.waiting.clear();
    this.cork();
    for (const [id, b] of all) this.send(id.slice(0, id.indexOf('\u0000')), b);
  };

  private unwait(budget: Budget): void {
    const n = this.waiting.get(budget) ?? 0;
    if (n <= 1) this.waiting.delete(budget);
    else this.waiting.set(budget, n - 1);
  }

  private send(redisKey: string, b: { bound: RedisBound; budget: Budget; at: number; entries: Entry[] }): void {
    const { bound, budget, at, entries } = b;
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
    readonly bound: RedisBound, readonly redisKey: string, readonly entries: Entry[], at: number, budget: Budget, private readonly calls: Calls,
  ) {
    super(budget, at, entries.some((e) => e.cost !== 0));
  }

  send(text: boolean): Promise<unknown> {
    const b = this.bound;
    const script = b.batch;
    const args: string[] = [this.calls.deadline(this) ?? ''];
    for (const e of this.entries) args.push(e.now === undefined ? '' : String(e.now), String(e.cost));
    return b.store.client.callBuffer(text ? 'EVAL' : 'EVALSHA', text ? script.text : script.sha, 1, this.redisKey, ...args);
  }

  override seen(reply: unknown): void {
    if (Array.isArray(reply) && reply.length > 0) CheckCall.prototype.seen.call({ budget: this.budget, bound: this.bound }, reply[reply.length - 1]);
  }

  answer(v: unknown): void {
    const list = v as Buffer[];
    this.entries.forEach((e, i) => {
      const c = new CheckCall(this.bound, this.redisKey, e.key, e.cost, e.now, this.at, this.budget, e.resolve);
      if (!Array.isArray(list) || !(list[i] instanceof Buffer)) c.fail(new Error('ratekeeper/redis: unreadable batch reply'));
      else c.answer(list[i]);
    });
  }

  fail(e: Error): void {
    for (const x of this.entries) x.resolve(this.bound.failed(e, x.key, x.cost, x.now));
  }
}
