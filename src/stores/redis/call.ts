/**
 * call — the store's one in-flight call mechanism: every script call (a check, a compound check, an override, a
 * listing's read…) is a Call started by Calls, which counts it against its server's pending budget (maxPending),
 * files its deadline in one queue (one timer per store), sends it (by SHA; by text once after NOSCRIPT), joins the
 * WAIT of its tick when it writes, and settles it once: `answer` with the reply, or `fail` with why (an error, the
 * deadline). A Call reports through those two methods only; what it answers (a Decision, a promise, several waiters
 * of one batch) is its subclass's business. Imports the client's `status` (client.ts, wire.ts) and the slot of a key.
 */
import type { RedisClient } from './client.js';
import { slotOf } from './slot.js';
import { DOWN } from './wire.js';

/** StoreUnavailableError — why a Redis call was given up: an error, a timeout, a disconnected client, too many pending. */
export class StoreUnavailableError extends Error {
  constructor(message: string, cause?: unknown) {
    super(`ratekeeper/redis: ${message}`, cause === undefined ? undefined : { cause });
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Budget — the commands pending on one server (one per Cluster master, one for a standalone client): maxPending
 * bounds each, so a hung node fills its own budget and not the others'.
 */
export interface Budget {
  readonly node: string;
  pending: number;
  /**
   * offset, offsetAt — the server's clock minus performance.now(), ms, as a lower bound learned from replies (the
   * server read its clock before the reply arrived): the largest sample, renewed at least every OFFSET_RENEW ms
   * (NaN until the first reply); offsetAt — performance.now() of that sample.
   */
  offset: number;
  offsetAt: number;
}

/** OFFSET_RENEW — ms after which a budget's clock offset is replaced by the next sample even if it is lower (a server clock that stepped back). */
const OFFSET_RENEW = 5_000;

/** learnOffset — one sample of a server's clock (`wall`, ms; < 0: none) read before a reply that arrived at `local` (performance.now()). */
export function learnOffset(b: Budget, wall: number, local: number): void {
  if (!(wall >= 0)) return;
  const sample = wall - local;
  if (!(sample <= b.offset) || local - b.offsetAt > OFFSET_RENEW) {
    b.offset = sample;
    b.offsetAt = local;
  }
}

/**
 * UNKNOWN_DEADLINE — the deadline a call carries while its server's clock offset is unknown: one no script reaches,
 * so the call runs whenever it arrives, but it makes a check read the server's clock (TIME) and return it, from which
 * the offset is learnt. Without it a store whose checks all give their own `now` (no TIME needed) never learnt it,
 * and none of its checks carried a deadline: a check refused by a timeout was charged when Redis woke.
 */
export const UNKNOWN_DEADLINE = '1e308';

/**
 * deadlineOf — the deadline a call given up at `at` (performance.now() ms) carries, on the server's clock: never later
 * than the server's time when the store gives up on it (the offset is a lower bound), so a script that starts after
 * that changes nothing; and a margin earlier (a tenth of the timeout, at most 25 ms), so that the reply of a script
 * that did run in time has that long to arrive before the store gives up. UNKNOWN_DEADLINE while the offset is
 * unknown (the first calls to a server, until a reply brings its clock).
 */
export function deadlineOf(b: Budget, at: number, timeout: number): string {
  const o = b.offset;
  return o === o ? String(at - (timeout < 250 ? timeout / 10 : 25) + o) : UNKNOWN_DEADLINE;
}

/** Deadline — one call waiting for its answer or its timeout, whichever comes first. */
export interface Deadline {
  at: number;
  done: boolean;
  fail: (e: Error) => void;
}

/**
 * Call — one call in flight. `done` — settled (answered, failed, or given up at its deadline `at`, performance.now()
 * ms): at most one of answer and fail is called, once. The command still counts against `budget` until the client
 * settles it, even after the deadline.
 */
export abstract class Call implements Deadline {
  done = false;
  constructor(readonly budget: Budget, readonly at: number, readonly writes: boolean) {}
  /** send — the command on the wire: by SHA, or (`text`, after NOSCRIPT) by the script's text, which caches it there. */
  abstract send(text: boolean): Promise<unknown>;
  /** answer — the reply, arrived before the deadline. */
  abstract answer(reply: unknown): void;
  /** fail — why the call was given up (a StoreUnavailableError: an error reply, the deadline). */
  abstract fail(e: Error): void;
  /** seen — every reply, also one that arrives after the deadline (a check learns the server's clock from it). */
  seen(_reply: unknown): void {}
}

/**
 * Calls — the calls in flight of one store: their pending counts (per server, bounded by maxPending), their
 * deadlines (one queue in the order sent, so in deadline order, and one timer), and the WAIT joined to the writes.
 */
export class Calls {
  /** pending — commands sent and not yet settled by the client, over all servers (each server's budget <= maxPending). */
  pending = 0;
  /** solo — the budget of a standalone client; budgets — a Cluster's, by master ('host:port'). */
  private readonly solo: Budget = { node: 'redis', pending: 0, offset: NaN, offsetAt: 0 };
  private readonly budgets = new Map<string, Budget>();
  /** deadlines — calls in flight in the order sent, so in deadline order; done ones are popped lazily from `head`. */
  private readonly deadlines: Deadline[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  /**
   * client — read for its `status`; timeout — ms before a call is given up; nodeOf — a Cluster's master of a slot
   * (undefined: standalone); waitFor — with `wait`, a write's promise joined with its tick's WAIT (wait.ts).
   */
  constructor(
    private readonly client: RedisClient, readonly timeout: number, readonly maxPending: number,
    private readonly nodeOf: ((slot: number) => string | undefined) | undefined,
    readonly waitFor: ((p: Promise<unknown>) => Promise<unknown>) | undefined,
  ) {}

  /**
   * budgetOf — the pending budget of the server a key lives on: the one of a standalone client; for a Cluster, the
   * master serving the key's slot as the client last learned it (a key whose slot is not known yet shares one budget).
   */
  budgetOf(redisKey: string): Budget {
    const nodeOf = this.nodeOf;
    if (nodeOf === undefined) return this.solo;
    const node = nodeOf(slotOf(redisKey)) ?? '?';
    let b = this.budgets.get(node);
    if (b === undefined) {
      b = { node, pending: 0, offset: NaN, offsetAt: 0 };
      this.budgets.set(node, b);
    }
    return b;
  }

  /** refuse — why a call must be answered by the failure policy at once (a disconnected client, too many pending on its server), or undefined. */
  refuse(budget: Budget): StoreUnavailableError | undefined {
    const status = this.client.status;
    if (status !== undefined && status !== 'ready' && DOWN.has(status)) return new StoreUnavailableError(`the client is ${status}`);
    if (budget.pending >= this.maxPending) return new StoreUnavailableError(`${budget.pending} commands are pending on ${budget.node} (maxPending)`);
    return undefined;
  }

  /** deadline — the deadline ARGV of `call` (deadlineOf), on its server's clock. */
  deadline(call: Call): string {
    return deadlineOf(call.budget, call.at, this.timeout);
  }

  /** start — `call` in flight: counted, its deadline filed, sent (the caller has checked refuse()). */
  start(call: Call): void {
    this.track(call);
    this.pending++;
    call.budget.pending++;
    this.send(call, false);
  }

  private send(call: Call, text: boolean): void {
    const sent = call.send(text);
    const w = this.waitFor;
    (w === undefined || !call.writes ? sent : w(sent)).then((v) => this.replied(call, v), (e: unknown) => this.errored(call, e, text));
  }

  private replied(call: Call, v: unknown): void {
    this.pending--;
    call.budget.pending--;
    call.seen(v);
    if (call.done) return;
    call.done = true;
    call.answer(v);
  }

  /** errored — a failed command: NOSCRIPT is retried once with the script's text (still pending) while the call is not given up; anything else fails it. */
  private errored(call: Call, e: unknown, retried: boolean): void {
    if (!retried && !call.done && e instanceof Error && e.message.startsWith('NOSCRIPT')) {
      this.send(call, true);
      return;
    }
    this.pending--;
    call.budget.pending--;
    if (call.done) return;
    call.done = true;
    call.fail(new StoreUnavailableError(e instanceof Error ? e.message : String(e), e));
  }

  /** track — files a call's deadline and makes sure the one timer is armed for the earliest. */
  private track(d: Deadline): void {
    const q = this.deadlines;
    while (this.head < q.length && q[this.head].done) this.head++;
    if (this.head > 1024 && this.head * 2 > q.length) {
      q.splice(0, this.head);
      this.head = 0;
    }
    q.push(d);
    if (this.timer === undefined) this.arm();
  }

  private arm(): void {
    const q = this.deadlines;
    while (this.head < q.length && q[this.head].done) this.head++;
    if (this.head === q.length) {
      q.length = 0;
      this.head = 0;
      this.timer = undefined;
      return;
    }
    const wait = Math.max(0, q[this.head].at - performance.now());
    this.timer = setTimeout(() => this.expire(), Math.ceil(wait));
    this.timer.unref();
  }

  /** expire — fails the calls whose deadline has passed, then re-arms for the next one. */
  private expire(): void {
    const now = performance.now();
    const q = this.deadlines;
    while (this.head < q.length && (q[this.head].done || q[this.head].at <= now)) {
      const d = q[this.head++];
      if (!d.done) {
        d.done = true;
        d.fail(new StoreUnavailableError(`no answer within ${this.timeout} ms`));
      }
    }
    this.arm();
  }

  /**
   * run — a script by SHA (EVAL when the server answers NOSCRIPT, which also caches it there), within the timeout
   * and the pending bound of its first key's server. `binary`: the reply kept as bytes. `deadline`: the small scripts
   * (override, unoverride, reset) get their deadline as ARGV[1] (deadline.lua): one that would start after the store
   * gave up on it changes nothing. Rejects with a StoreUnavailableError; never leaves a rejection unhandled.
   */
  run(script: ScriptText, keys: string[], args: (string | number)[], binary = false, deadline = false): Promise<unknown> {
    const budget = this.budgetOf(keys[0]);
    const refused = this.refuse(budget);
    if (refused !== undefined) return Promise.reject(refused);
    const at = performance.now() + this.timeout;
    if (deadline) args = [deadlineOf(budget, at, this.timeout), ...args];
    return new Promise((resolve, reject) => this.start(new ScriptCall(budget, at, this.client, script, keys, args, binary, resolve, reject)));
  }

  /** close — stops the timer (calls still in flight settle when the client answers them). */
  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** ScriptText — a script as sent: its SHA1 and its text (scripts.ts Script). */
export interface ScriptText {
  readonly sha: string;
  readonly text: string;
}

/** ScriptCall — one script call whose caller awaits the raw reply (Calls.run): resolved with it, or rejected with why. */
class ScriptCall extends Call {
  constructor(
    budget: Budget, at: number, private readonly client: RedisClient, private readonly script: ScriptText,
    private readonly keys: string[], private readonly args: (string | number)[], private readonly binary: boolean,
    private readonly resolve: (v: unknown) => void, private readonly reject: (e: Error) => void,
  ) {
    super(budget, at, true);
  }

  send(text: boolean): Promise<unknown> {
    const { client: c, script, keys, args } = this;
    if (this.binary) return c.callBuffer(text ? 'EVAL' : 'EVALSHA', text ? script.text : script.sha, keys.length, ...keys, ...args);
    return text ? c.eval(script.text, keys.length, ...keys, ...args) : c.evalsha(script.sha, keys.length, ...keys, ...args);
  }

  answer(reply: unknown): void {
    this.resolve(reply);
  }

  fail(e: Error): void {
    this.reject(e);
  }
}
