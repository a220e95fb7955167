/**
 * localFirst/bound — LocalBound, one policy's view of the Redis store in local-first mode: each client's state is
 * decided on an in-process copy by the core's own Policy (as the memory store decides), and the charges made here
 * are sent to Redis by the policy's sync script (script.ts, lua/localFirst.lua) when the client has `maxUnsynced`
 * units Redis has not seen or after `flushEvery`, whichever is first, many clients per call; the reply (the global
 * state, with a policy's sliding log) replaces the copy, and the charges made since that flush was sent are replayed
 * onto it. A refusal that starts the policy's automatic block is honoured here at once and written as the exact mode
 * writes it. docs/fleet.md states the bound and derives it.
 * Long because the copy's life is one state machine (decide, charge, schedule, send, answer, fail, refetch after an
 * exact-mode write) whose steps share its fields; split, each file would reach into the others' invariants.
 */
import type { Decision, Override } from '../../../core/types.js';
import type { Policy } from '../../../core/policy.js';
import type { Log } from '../../../core/algorithms/slidingLog.js';
import type { OverrideRequest } from '../../types.js';
import { RedisBound, type BoundHost } from '../bound.js';
import { slotOf } from '../slot.js';
import { StoreUnavailableError } from '../call.js';
import { syncScript, type SyncScript } from './script.js';
import { fillLog, logFits, MAX_CHARGES, CALL_CHARGES } from './logCopy.js';
import type { LocalFirstSettings } from './options.js';
import { KEEP, type LocalHub } from './stats.js';

/** Flight — one flush of one client: its sequence number, its charges (triples t, cost, flag 1/0), their units, when it was first sent (performance.now()). */
interface Flight {
  seq: number;
  charges: number[];
  units: number;
  first: number;
  sent: number;
  /** alone — Redis refused this flush for its own client's sake (a key of the wrong type…): sent in a call of its own, so that it fails no other client's. */
  alone?: boolean;
}

/** GLOBAL — error replies about the server, not one client's keys: a call that fails with one is not split client by client. */
const GLOBAL = /^(OOM|READONLY|BUSY|LOADING|MASTERDOWN|NOREPLICAS|CLUSTERDOWN|MISCONF|NOSCRIPT|TRYAGAIN|MOVED|ASK|CROSSSLOT|NOPERM|NOAUTH|WRONGPASS)\b/;

/**
 * tryAgain — whether a failed sync call met its slot mid-migration: Redis answered TRYAGAIN (a script's keys not all on
 * the node serving it), as such (node-redis) or after the client's own retries ran out (ioredis: "Too many Cluster
 * redirections", its last error TRYAGAIN or the ASK or MOVED of the bounces between).
 */
function tryAgain(e: unknown): boolean {
  for (let x = e, i = 0; x instanceof Error && i < 4; x = x.cause, i++) if (/\bTRYAGAIN\b|Too many Cluster redirections/.test(x.message)) return true;
  return false;
}

/** MOVING_HOLD — ms a slot whose sync met TRYAGAIN is held as migrating (unless a sync of it succeeds first). */
const MOVING_HOLD = 1000;

/** clientError — whether a failed sync call was refused by Redis for something a client's keys may cause alone (an error reply not about the server). */
function clientError(e: unknown): boolean {
  const cause = e instanceof Error ? (e.cause as { name?: unknown; message?: unknown } | undefined) : undefined;
  if (cause === undefined || (cause.name !== 'ReplyError' && cause.name !== 'ErrorReply')) return false;
  return typeof cause.message === 'string' && !GLOBAL.test(cause.message);
}

/**
 * Copy — an instance's copy of one client. Invariant: `state` is the global state the latest answered sync returned
 * (read at or after `synced`, performance.now() ms) with `unsent` replayed onto it; the units Redis has not seen are
 * unsentUnits + the in-flight flight's + the failed one's (`retry`, re-sent as is before anything new).
 */
class Copy {
  synced = -Infinity;
  /**
   * big — performance.now() when a sync answered that the client's sliding log has too many entries near a window's
   * edge to return (script.ts LOG_COPY): its checks are the exact mode's until flushEvery later, when the next one
   * fetches it again; 0: none.
   */
  big = 0;
  /** at — the latest time a check of this client was decided or asked at (ms, the checks' clock): sent with each sync. */
  at = 0;
  /** must — the copy lacks a write made outside the sync (an exact check, an override, a reset): refetched before any decision, whatever `cold` says. */
  must = false;
  /** mustSince — performance.now() when `must` was set (again when an exact-mode check of the client settles): a sync sent after it clears it. */
  mustSince = 0;
  unsent: number[] = [];
  unsentUnits = 0;
  inflight: Flight | undefined;
  retry: Flight | undefined;
  override: Override | undefined;
  debt = false;
  /** waiters — checks waiting for the in-flight (or next) sync's answer. */
  waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  /** waitSince — performance.now() when the first of the current waiters began to wait. */
  waitSince = 0;
  /** log — the shared sliding log, for a policy with slidingLog rules (the global one as synced, charges since replayed). */
  constructor(readonly state: Float64Array, readonly log: Log | undefined) {}
  get unseen(): number {
    return this.unsentUnits + (this.inflight?.units ?? 0) + (this.retry?.units ?? 0);
  }
}

/** BATCH — the most clients one sync call carries (standalone; a Cluster's calls carry the clients of one slot). */
const BATCH = 128;
/** ATTEMPTS — syncs a check waits for before it is decided by the exact mode's script (others keep taking the budget). */
const ATTEMPTS = 4;

/**
 * LocalBound — RedisBound with the local-first mode's checks. Everything else (overrides, reset, refund, listing) is
 * the exact mode's, after which the client's copy is refetched before its next decision.
 */
export class LocalBound extends RedisBound {
  private readonly syncer: SyncScript;
  private readonly copies = new Map<string, Copy>();
  /**
   * exacting — clients with exact-mode checks in flight, and how many: while any is, no sync makes the client's copy
   * fresh (a check re-sent after NOSCRIPT reaches Redis behind syncs sent later, whose state lacks its charge).
   */
  private readonly exacting = new Map<string, number>();
  /**
   * moving — Cluster slots whose sync met TRYAGAIN (mid-migration), until when (performance.now() ms). A sync carries
   * two keys per client, and a node serving a migrating slot runs a script only if it holds all of them — never for a
   * client with no state yet — while the exact mode's check (one key) follows the ASK. So a client of such a slot with
   * nothing unseen is decided by the exact mode instead of fetching.
   */
  private readonly moving = new Map<number, number>();
  /** due — clients with unsent charges, by when they must be sent (performance.now() ms), in that order. */
  private readonly due = new Map<string, number>();
  /** urgent — clients to sync at the end of this tick. */
  private urgent = new Set<string>();
  private scheduled = false;
  /** held — a flush waits for the window (window.ts): flushNow does nothing until a sync call settles; holdTimer — answers the waiting checks meanwhile. */
  private held = false;
  private holdTimer: NodeJS.Timeout | undefined;
  /** later — clients the timer made due (their flushEvery passed), sent after the urgent ones. */
  private later = new Set<string>();
  /** waiting — clients with checks waiting for a sync, in the order they began to wait (expireWaiters). */
  private readonly waiting = new Map<string, Copy>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  /** lastKey — the most recently used copy's key (its LRU move is skipped). */
  private lastKey: string | undefined;
  private readonly m: number;
  private readonly every: number;
  private readonly fresh: boolean;
  private readonly maxKeys: number;
  /** cells — the entries the copies' sliding logs have room for, summed (their buffers: 16 bytes each), kept under maxLogEntries. */
  private cells = 0;
  private readonly maxCells: number;
  /** retired — detach() released this bound: every check is the exact mode's, and the copies go once their charges are answered (retire). */
  private retired = false;
  /** closed — close() ran: the retirement stops waiting; wake — ends its pause between two flush attempts early. */
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(store: BoundHost, policy: Policy, namespace: string, readonly settings: LocalFirstSettings, readonly hub: LocalHub) {
    super(store, policy, namespace);
    this.syncer = syncScript(policy);
    this.m = settings.maxUnsynced;
    this.every = settings.flushEvery;
    this.fresh = settings.cold === 'fresh';
    this.maxKeys = settings.maxKeys;
    this.maxCells = settings.maxLogEntries;
  }

  override evaluate(key: string, cost: number, now: number | undefined): Promise<Decision> {
    if (this.retired) return this.exactWithout(key, cost, now);
    let c = this.copies.get(key);
    // a cold client under cold 'fresh' starts a copy here, as slow() would, without an async frame per new client
    if (c === undefined && this.fresh && !this.exacting.has(key)) {
      if (!this.room()) return this.exactWithout(key, cost, now);
      c = this.insert(key);
      c.synced = performance.now();
    }
    if (c !== undefined && this.ready(c, cost, performance.now())) return Promise.resolve(this.decide(key, c, cost, now));
    return this.slow(key, cost, now);
  }

  /** ready — whether `c` may decide a request of `cost` now: fresh enough, and the charge within the budget. */
  private ready(c: Copy, cost: number, p: number): boolean {
    if (c.must || c.big !== 0 || (p - c.synced > this.every && !this.fresh) || c.unsent.length >= 3 * MAX_CHARGES) return false;
    const unseen = c.unseen;
    return unseen === 0 ? cost <= this.m : unseen + cost <= this.m;
  }

  /** slow — a check that needs a sync first (a cold or stale copy, a spent budget), or the exact mode (a cost above maxUnsynced). */
  private async slow(key: string, cost: number, now: number | undefined): Promise<Decision> {
    for (let attempt = 0; ; attempt++) {
      if (this.retired) return this.exactWithout(key, cost, now);
      let c = this.copies.get(key);
      if (c === undefined) {
        // no room for another copy (maxKeys, every old one still unsynced): this check is decided exactly, without one
        if (!this.room()) return this.exactWithout(key, cost, now);
        c = this.insert(key);
        if (this.exacting.has(key)) {
          // an exact-mode check of it is in flight (made without a copy): fetched after that check settles
          c.must = true;
          c.mustSince = performance.now();
        } else if (this.fresh) {
          c.synced = performance.now();
        }
      }
      const p = performance.now();
      if (this.ready(c, cost, p)) return this.decide(key, c, cost, now);
      // a log that could not be copied: the exact mode decides until flushEvery after the sync that said so (then a fetch)
      if (c.big !== 0 && p - c.big <= this.every && c.unseen === 0) return this.exactWithout(key, cost, now);
      if ((cost > this.m || attempt >= ATTEMPTS || this.isMoving(key)) && c.unseen === 0) return this.exact(key, c, cost, now);
      c.at = now ?? this.hub.now();
      try {
        await this.awaitSync(key, c);
      } catch (e) {
        // its slot is migrating: the exact mode can still decide a client with nothing unseen
        if (c.unseen === 0 && tryAgain(e)) return this.exact(key, c, cost, now);
        return this.failed(e, key, cost, now);
      }
    }
  }

  /**
   * exact — the exact mode's check (a cost above the budget): Redis decides. The copy is stale from before it is sent
   * until a sync sent after it has *settled* answers, so that no check decides on a copy that lacks this instance's own
   * charge. Sent after it on the same connection is not enough: a check script Redis does not have yet answers NOSCRIPT
   * and is re-sent by its text behind the fetches sent meanwhile, which then return the state without its charge.
   */
  private exact(key: string, c: Copy, cost: number, now: number | undefined): Promise<Decision> {
    c.must = true;
    c.mustSince = performance.now();
    return this.exactWithout(key, cost, now);
  }

  /** isMoving — whether `key`'s slot met TRYAGAIN less than MOVING_HOLD ago (a Cluster slot mid-migration). */
  private isMoving(key: string): boolean {
    if (this.moving.size === 0) return false;
    const slot = slotOf(this.redisKey(key));
    const until = this.moving.get(slot);
    if (until === undefined) return false;
    if (until > performance.now()) return true;
    this.moving.delete(slot);
    return false;
  }

  /**
   * decide — the decision on the copy, by the core's Policy; what it charged is kept to be sent. A refusal that starts
   * the policy's automatic block resolves once the block is written (autoBlock).
   */
  private decide(key: string, c: Copy, cost: number, now: number | undefined): Decision | Promise<Decision> {
    const t = now ?? this.hub.now();
    c.at = t;
    const ov = c.override !== undefined && c.override.until > t ? c.override : undefined;
    const policy = this.policy;
    const log = c.log;
    const cap = log === undefined ? 0 : log.cap;
    const d = policy.evaluate(c.state, 0, log, t, cost, ov);
    if (log !== undefined && log.cap !== cap) this.grew(log.cap - cap);
    if (cost > 0 && ov === undefined) {
      const r = d.reason;
      if (r === 'allowed') this.charge(key, c, t, cost, 1);
      else if ((r === 'limited' || r === 'dry-run') && policy.hasStrict) this.charge(key, c, t, cost, 0);
    }
    if (key !== this.lastKey) {
      this.copies.delete(key);
      this.copies.set(key, c);
      this.lastKey = key;
    }
    if (ov === undefined && policy.blockFor > 0 && policy.autoBlocks(d, cost)) return this.autoBlockHere(key, c, t, now, d);
    return d;
  }

  /**
   * autoBlockHere — a refusal on the copy starts the policy's automatic block: this instance honours it at once (the
   * copy's override), and writes it as the exact mode does (the override call with ifNone: a block or exemption in
   * force is kept), after this client's unsynced charges (setOverride settles them first); the other instances learn
   * it at their next sync. Resolves to `d`, its retryAfter the block's end — the rules' own when the write fails (the
   * copy's block is then withdrawn).
   */
  private autoBlockHere(key: string, c: Copy, t: number, now: number | undefined, d: Decision): Promise<Decision> {
    const policy = this.policy;
    const rules = d.retryAfter;
    const reason = policy.autoBlocked(d);
    const mine: Override = { kind: 'block', until: t + policy.blockFor, reason };
    c.override = mine;
    return this.setOverride(key, { kind: 'block', for: policy.blockFor, reason, ifNone: true }, now).then(
      () => d,
      () => {
        if (c.override === mine) c.override = undefined;
        d.retryAfter = rules;
        return d;
      },
    );
  }

  /** charge — files a charge to be sent: at once past the budget, else by flushEvery from the first unsent one. */
  private charge(key: string, c: Copy, t: number, cost: number, flag: number): void {
    c.unsent.push(t, cost, flag);
    c.unsentUnits += cost;
    this.hub.stats.unsynced += cost;
    if (c.unseen >= this.m || c.unsent.length >= 3 * MAX_CHARGES) this.soon(key);
    else if (!this.due.has(key)) this.schedule(key, performance.now() + this.every);
  }

  /** insert — a new copy (a fresh client's state until a sync says otherwise); the caller made room (room()). */
  private insert(key: string): Copy {
    const c = new Copy(new Float64Array(Math.max(1, this.policy.stateSize)), this.policy.newLog());
    if (c.log !== undefined) this.grew(c.log.cap);
    this.copies.set(key, c);
    this.hub.stats.copies++;
    return c;
  }

  /**
   * room — whether another copy fits under maxKeys (and the copies' logs under maxLogEntries), after dropping the least
   * recently used idle ones (nothing unsynced, nothing in flight) among the 16 oldest; the oldest with unsynced charges
   * are sent at once (idle once answered).
   */
  private room(): boolean {
    if (this.copies.size < this.maxKeys && this.cells < this.maxCells) return true;
    let looked = 0;
    for (const [k, old] of this.copies) {
      if ((this.copies.size < this.maxKeys && this.cells < this.maxCells) || looked++ >= 16) break;
      if (old.unseen === 0 && old.inflight === undefined && old.waiters.length === 0) {
        this.drop(k, old);
      } else {
        this.soon(k);
      }
    }
    return this.copies.size < this.maxKeys && this.cells < this.maxCells;
  }

  /** grew — the copies' logs have room for `d` more entries. */
  private grew(d: number): void {
    this.cells += d;
    this.hub.stats.logEntries += d;
  }

  /** drop — forgets `k`'s copy (idle: nothing unsynced or in flight). */
  private drop(k: string, old: Copy): void {
    this.copies.delete(k);
    this.hub.stats.copies--;
    if (old.debt) this.hub.stats.debt--;
    if (old.log !== undefined) this.grew(-old.log.cap);
    if (k === this.lastKey) this.lastKey = undefined;
  }

  /**
   * exactWithout — the exact mode's check of a client this instance keeps no copy of (no room under maxKeys), or whose
   * copy exact() made stale; counted in `exacting` until it settles, when the copy (if any by then) is stale again.
   */
  private exactWithout(key: string, cost: number, now: number | undefined): Promise<Decision> {
    this.hub.stats.exact++;
    const exacting = this.exacting;
    exacting.set(key, (exacting.get(key) ?? 0) + 1);
    return super.evaluate(key, cost, now).finally(() => {
      const left = (exacting.get(key) ?? 1) - 1;
      if (left > 0) exacting.set(key, left);
      else exacting.delete(key);
      const c = this.copies.get(key);
      if (c !== undefined) {
        c.must = true;
        c.mustSince = performance.now();
      }
    });
  }

  /** awaitSync — resolves at the next answer of a sync of `key` (the one in flight, or one sent at the end of this tick). */
  private awaitSync(key: string, c: Copy): Promise<void> {
    return new Promise((resolve, reject) => {
      if (c.waiters.length === 0) {
        c.waitSince = performance.now();
        this.waiting.delete(key);
        this.waiting.set(key, c);
      }
      c.waiters.push({ resolve, reject });
      if (c.inflight === undefined) this.soon(key);
    });
  }

  /** soon — syncs `key` at the end of this tick, with every other client due then (one batch). */
  private soon(key: string): void {
    // in one queue only: a key in both (the timer's, held behind the window, and now urgent) went into one call twice,
    // its second flight (an empty fetch) replacing the first, whose charges were then never sent
    this.later.delete(key);
    this.urgent.add(key);
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(() => this.flushNow());
    }
  }

  /** schedule — `key` is due at `at` (performance.now() ms); the one timer is armed for the earliest. */
  private schedule(key: string, at: number): void {
    this.due.delete(key);
    this.due.set(key, at);
    if (at < this.timerAt) this.arm(at);
  }

  private arm(at: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.tick(), Math.max(0, Math.ceil(at - performance.now())));
    this.timer.unref();
  }

  /** tick — the timer: every client due by now is synced; re-armed for the next. */
  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const p = performance.now() + 0.5;
    for (const [k, at] of this.due) {
      if (at > p) {
        this.arm(at);
        break;
      }
      this.due.delete(k);
      if (!this.urgent.has(k)) this.later.add(k);
    }
    this.flushNow();
  }

  /** flush — sends every unsent charge of this policy now; resolves when Redis has answered (or failed). */
  async flush(): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const [k, c] of this.copies) if (c.unseen > 0) waits.push(this.awaitSync(k, c).catch(() => undefined));
    await Promise.all(waits);
  }

  /** close — stops the timer (the caller flushes first if it wants the charges sent), and a retirement's waiting. */
  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    this.closed = true;
    this.wake?.();
  }

  /**
   * retire — the policy is detached (no limiter uses it): from now on checks are the exact mode's; the unsynced
   * charges are sent (a failed flush is retried every flushEvery, and given up after KEEP / 2 as always), then every
   * copy is dropped. Resolves then, or at close().
   */
  async retire(): Promise<void> {
    this.retired = true;
    while (!this.closed && this.busy()) {
      await this.flush();
      if (this.closed || !this.busy()) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.every);
        t.unref();
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = undefined;
    }
    const stats = this.hub.stats;
    for (const c of this.copies.values()) {
      stats.copies--;
      if (c.debt) stats.debt--;
    }
    this.copies.clear();
    this.grew(-this.cells);
    this.due.clear();
    this.urgent.clear();
    this.later.clear();
    this.waiting.clear();
    this.lastKey = undefined;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** busy — whether a copy has charges Redis has not answered, or a sync in flight. */
  private busy(): boolean {
    for (const c of this.copies.values()) if (c.unseen > 0 || c.inflight !== undefined) return true;
    return false;
  }

  /**
   * flushNow — one batch: a flight for every queued client not already in flight (urgent first, then those the timer
   * made due), grouped into script calls, as many calls as the window lets go; the rest stay queued, in order, until a
   * call settles. A check that has waited the store's timeout for its sync is answered by the failure policy.
   */
  private flushNow(): void {
    this.scheduled = false;
    const p = performance.now();
    this.expireWaiters(p);
    if (this.held) return;
    const groups = new Map<number, string[]>();
    /** carried — the charges each group's call carries so far (at most CALL_CHARGES: the call's ARGV is bounded). */
    const carried = new Map<number, number>();
    const cluster = this.store.isCluster;
    /** back — the keys taken from the queues whose call the window held back. */
    const back: string[] = [];
    for (const queue of [this.urgent, this.later]) {
      for (const key of queue) {
        if (back.length > 0) break;
        queue.delete(key);
        const c = this.copies.get(key);
        if (c === undefined || c.inflight !== undefined) continue;
        if (c.retry?.alone === true) {
          if (!this.launch([key], p)) back.push(key);
          continue;
        }
        const g = cluster ? slotOf(this.redisKey(key)) : 0;
        const count = (c.retry !== undefined ? c.retry.charges.length : c.unsent.length) / 3;
        let list = groups.get(g);
        if (list !== undefined && (list.length >= BATCH || (carried.get(g) as number) + count > CALL_CHARGES)) {
          if (!this.launch(list, p)) {
            back.push(key);
            break;
          }
          list = undefined;
        }
        if (list === undefined) {
          list = [];
          groups.set(g, list);
          carried.set(g, 0);
        }
        list.push(key);
        carried.set(g, (carried.get(g) as number) + count);
      }
    }
    for (const list of groups.values()) if (back.length > 0 || !this.launch(list, p)) back.push(...list);
    if (back.length === 0) return;
    // ahead of what is still queued: re-queued first, the urgent ones' order kept
    const rest = this.urgent;
    this.urgent = new Set(back);
    for (const k of rest) this.urgent.add(k);
    this.held = true;
    this.hub.window.wait(this.resume);
    this.holdTimer ??= setTimeout(() => {
      this.holdTimer = undefined;
      this.expireWaiters(performance.now());
    }, this.store.calls.timeout).unref();
  }

  /** resume — a sync call settled: a flush the window held back tries again. */
  private readonly resume = (): void => {
    this.held = false;
    if (this.holdTimer !== undefined) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    if (this.urgent.size > 0 || this.later.size > 0) {
      if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(() => this.flushNow());
      }
    }
  };

  /**
   * expireWaiters — the checks that have waited the store's timeout for a sync (queued behind the window, or in a
   * call not answered yet) are answered by the failure policy. `waiting` is in the order they began to wait.
   */
  private expireWaiters(p: number): void {
    const timeout = this.store.calls.timeout;
    for (const [key, c] of this.waiting) {
      if (p - c.waitSince <= timeout) break;
      this.waiting.delete(key);
      if (c.waiters.length > 0) this.rejectWaiters(c, new StoreUnavailableError(`no sync answered within ${timeout} ms`));
    }
  }

  /**
   * launch — sends one call of `keys` (one server's) if the window lets it go: each client's flight made (its retry, its
   * unsent charges, or a fetch) and sent. False: held back, nothing changed.
   */
  private launch(keys: string[], p: number): boolean {
    const node = this.store.calls.budgetOf(this.redisKey(keys[0])).node;
    if (!this.hub.window.take(node, keys.length)) return false;
    for (const key of keys) {
      const c = this.copies.get(key) as Copy;
      let f = c.retry;
      if (f !== undefined) {
        c.retry = undefined;
      } else if (c.unsent.length > 0) {
        f = { seq: this.hub.nextSeq(), charges: c.unsent, units: c.unsentUnits, first: p, sent: p };
        c.unsent = [];
        c.unsentUnits = 0;
        this.due.delete(key);
      } else {
        f = { seq: 0, charges: [], units: 0, first: p, sent: p };
        this.hub.stats.fetches++;
      }
      f.sent = p;
      c.inflight = f;
    }
    this.send(keys, node);
    return true;
  }

  /** rejectWaiters — the checks waiting for `c`'s sync are answered by `e` (the failure policy decides them). */
  private rejectWaiters(c: Copy, e: unknown): void {
    const waiters = c.waiters;
    c.waiters = [];
    for (const w of waiters) w.reject(e);
  }

  /** send — one sync call of `keys` to `node`, taken from the window (released when the call settles). */
  private send(keys: string[], node: string, given?: Copy[]): void {
    const redisKeys: string[] = [];
    const args: string[] = [this.hub.id, String(KEEP), String(this.every)];
    const copies: Copy[] = [];
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const c = given?.[i] ?? (this.copies.get(key) as Copy);
      copies.push(c);
      const rk = this.redisKey(key);
      redisKeys.push(rk, `${rk}~s`);
      const f = c.inflight as Flight;
      args.push(String(f.seq), String(f.charges.length / 3), String(c.at));
      for (let i = 0; i < f.charges.length; i++) args.push(String(f.charges[i]));
    }
    const sent = performance.now();
    this.hub.stats.calls++;
    this.store.run(this.syncer.script, redisKeys, args, true).then(
      (reply) => {
        const at = performance.now();
        this.hub.window.release(node, keys.length);
        this.hub.latency(at - sent);
        if (this.moving.size > 0) this.moving.delete(slotOf(redisKeys[0])); // the slot's syncs run again
        // a reply not in the sync's shape (a proxy, a server that is not Redis): that client's flush failed (retried as is)
        const list: unknown[] = Array.isArray(reply) ? reply : [];
        const least = 32 + 8 * this.syncer.redisSize + (this.syncer.hasLog ? 16 : 0);
        let bad: StoreUnavailableError | undefined;
        for (let i = 0; i < keys.length; i++) {
          const r = list[i];
          const kind = Buffer.isBuffer(r) && r.length >= least ? r.readDoubleLE(0) : 0;
          if ((kind === 1 || kind === 2 || kind === 3) && (!this.syncer.hasLog || logFits(r as Buffer, least - 16))) {
            this.answered(keys[i], copies[i], r as Buffer, at);
            continue;
          }
          if (bad === undefined) {
            bad = new StoreUnavailableError(`unreadable reply to the local-first sync: ${Array.isArray(reply) ? `item ${i} of ${reply.length}` : typeof reply}`);
            this.hub.stats.failures++;
            this.store.noteFailure(bad);
          }
          this.failedSync(keys[i], copies[i], bad);
        }
      },
      (e: unknown) => {
        this.hub.window.release(node, keys.length);
        this.hub.stats.failures++;
        this.store.noteFailure(e);
        if (this.store.isCluster && tryAgain(e)) this.moving.set(slotOf(redisKeys[0]), performance.now() + MOVING_HOLD);
        const mine = clientError(e);
        // one client's keys may have failed the whole call (Redis runs the script to its first error): each is sent
        // alone, with the same flight (a client applied before the error is then a duplicate, applied once)
        if (mine && keys.length > 1) {
          for (let i = 0; i < keys.length; i++) {
            this.hub.window.take(node, 1, true);
            this.send([keys[i]], node, [copies[i]]);
          }
          return;
        }
        for (let i = 0; i < keys.length; i++) {
          if (mine) (copies[i].inflight as Flight).alone = true;
          this.failedSync(keys[i], copies[i], e);
        }
      },
    );
  }

  /** answered — a client's global state arrived: it replaces the copy, and the charges made since are replayed onto it. */
  private answered(key: string, c: Copy, r: Buffer, at: number): void {
    const f = c.inflight as Flight;
    c.inflight = undefined;
    // Redis answers again: the 'memory' fallback is over (as a check's reply ends it in the exact mode)
    this.store.failing = false;
    const stats = this.hub.stats;
    const kind = r.readDoubleLE(0);
    const until = r.readDoubleLE(8);
    const wall = r.readDoubleLE(16);
    const applied = r.readDoubleLE(24);
    this.hub.learn(wall, at);
    stats.flushes++;
    if (f.units > 0) {
      stats.unsynced -= f.units;
      stats.flushedUnits += f.units;
      if (applied === 0) stats.duplicates++;
    }
    const pick = this.syncer.pick;
    const s = c.state;
    for (let i = 0; i < pick.length; i++) s[i] = r.readDoubleLE(32 + 8 * pick[i]);
    let end = 32 + 8 * this.syncer.redisSize;
    const log = c.log;
    if (log !== undefined) {
      const cap = log.cap;
      const count = fillLog(log, r, end);
      end += 16 + 16 * Math.max(0, count);
      this.grew(log.cap - cap);
      c.big = count < 0 ? at : 0;
    }
    if (kind > 1) {
      const o: Override = { kind: kind === 2 ? 'block' : 'exempt', until };
      if (r.length > end) o.reason = r.toString('utf8', end + 1);
      c.override = o;
    } else {
      c.override = undefined;
    }
    const u = c.unsent;
    const replay = c.big === 0 ? log : undefined;
    for (let i = 0; i < u.length; i += 3) this.policy.force(s, 0, u[i], u[i + 1], u[i + 2] === 1, replay);
    c.synced = f.sent;
    if (f.sent >= c.mustSince && !this.exacting.has(key)) c.must = false;
    const debt = c.big === 0 && !this.policy.verdict(s, 0, log, this.hub.now(), 1, undefined);
    if (debt !== c.debt) {
      stats.debt += debt ? 1 : -1;
      c.debt = debt;
    }
    const waiters = c.waiters;
    c.waiters = [];
    if (waiters.length > 0) this.waiting.delete(key);
    for (const w of waiters) w.resolve();
    if (c.retry !== undefined || c.unseen >= this.m) this.soon(key);
    if (this.cells > this.maxCells) this.room();
  }

  /** failedSync — a sync call failed: the flight is retried as is (same sequence: applied at most once), or given up after KEEP / 2. */
  private failedSync(key: string, c: Copy, e: unknown): void {
    const f = c.inflight as Flight;
    c.inflight = undefined;
    if (f.units > 0) {
      if (performance.now() - f.first > KEEP / 2) {
        this.hub.stats.lost += f.units;
        this.hub.stats.unsynced -= f.units;
      } else {
        c.retry = f;
        this.schedule(key, performance.now() + this.every);
      }
    }
    const waiters = c.waiters;
    c.waiters = [];
    if (waiters.length > 0) this.waiting.delete(key);
    for (const w of waiters) w.reject(e);
  }

  // ---- the exact mode's operations: the client's copy is refetched before its next decision ----

  /** stale — `key`'s copy is refetched before its next decision (after a write this instance made outside the sync). */
  private stale(key: string, o?: Override | null): void {
    const c = this.copies.get(key);
    if (c === undefined) return;
    c.synced = -Infinity;
    c.must = true;
    c.mustSince = performance.now();
    if (o !== undefined) c.override = o ?? undefined;
  }

  override async setOverride(key: string, request: OverrideRequest, now: number | undefined): Promise<void> {
    // this instance's charges first: the sync drops a charge made while a block or exemption is in force, and one made
    // before the override was set would look so (the header has no start)
    await this.settle(key);
    await super.setOverride(key, request, now);
    const t = now ?? this.hub.now();
    if (request.ifNone !== true) this.stale(key, { kind: request.kind, until: request.for === Infinity ? Infinity : t + request.for, reason: request.reason });
    else this.stale(key);
  }

  override async clearOverride(key: string, kind: Override['kind']): Promise<void> {
    await super.clearOverride(key, kind);
    const c = this.copies.get(key);
    this.stale(key, c?.override?.kind === kind ? null : undefined);
  }

  override async reset(key: string): Promise<void> {
    await this.settle(key);
    await super.reset(key);
    this.stale(key);
  }

  override async refund(key: string, cost: number, now: number | undefined, leakyOnly: boolean): Promise<Decision> {
    await this.settle(key);
    const d = await super.refund(key, cost, now, leakyOnly);
    this.stale(key);
    return d;
  }

  /** settle — `key`'s unsynced charges sent and answered (so that an exact-mode write comes after them). */
  private async settle(key: string): Promise<void> {
    const c = this.copies.get(key);
    for (let i = 0; c !== undefined && c.unseen > 0 && i < ATTEMPTS; i++) await this.awaitSync(key, c).catch(() => undefined);
  }
}
