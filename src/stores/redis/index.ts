import { createRequire } from 'node:module';
import type { Decision, Override, RuleOutcome } from '../../core/types.js';
import { Outcome, type Policy } from '../../core/policy.js';
import { RatekeeperError, show } from '../../core/errors.js';
import { checkOptions } from '../../core/options.js';
import { MemoryStore, type MemoryTable } from '../memory.js';
import type { BoundStore, OverrideEntry, OverrideRequest, Part, Store } from '../types.js';
import { Script, compoundScript, hasDelay, hasRate, lua, opScript, policyId, policyScript, refundScript } from './scripts.js';
import { slotOf, tagSlot } from './slot.js';
import { NodeRedisAdapter, isNodeRedis } from './node-redis.js';
import { HealthProbe, type StoreHealth } from './health.js';
import { Placement, STANDALONE_TAG, bucketOf, memberOf, registryOf, splitMember, type Bucket } from './listing.js';
import { localClock } from '../../core/clock.js';
import { lengthens, retime, type Scanner } from './retime.js';

/**
 * RedisClient — what the store needs of a client: ioredis's `Redis` and `Cluster` both fit. `status` is read to
 * answer at once, without queueing a command, while the client is reconnecting.
 */
export interface RedisClient {
  evalsha(sha: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** callBuffer — a command whose reply is kept as bytes (the policy script replies with packed doubles). */
  callBuffer(command: string, ...args: (string | number)[]): Promise<unknown>;
  readonly status?: string;
}

/**
 * NodeRedisLike — a node-redis (`redis` package) client from `createClient()` or cluster from `createCluster()`,
 * connected by the caller (`await client.connect()`).
 */
export interface NodeRedisLike {
  sendCommand(...args: never[]): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
}

export type { StoreHealth, NodeHealth } from './health.js';

/** OnError — what a check answers when Redis does not: refuse, admit, or decide on a local memory store. */
export type OnError = 'deny' | 'allow' | 'memory';

/** RedisStoreOptions — the Redis store's client, key layout and failure policy. */
export interface RedisStoreOptions {
  /**
   * client — an ioredis `Redis` or `Cluster`, or a node-redis client (`createClient()`) or cluster
   * (`createCluster()`), connected by the caller (the store never closes it). Give it an `error` listener; with
   * ioredis consider `maxRetriesPerRequest: 1` so that commands caught by a disconnection fail fast.
   * @example new Redis({ host: '127.0.0.1', port: 6379 })
   */
  client: RedisClient | NodeRedisLike;
  /** prefix — the start of every key; must not contain `{` or `}` (the client's part is the hash tag). @default 'rk:' */
  prefix?: string;
  /**
   * timeout — ms a call may take before the store gives up on it and answers by `onError` (the command itself is
   * not cancelled: it counts against `maxPending` until Redis or the client settles it). @default 1000
   */
  timeout?: number;
  /**
   * onError — the failure policy when Redis errs, times out or is disconnected: `'deny'` fails closed and `'allow'`
   * fails open (both with `reason: 'store-unavailable'`); `'memory'` decides on a local memory store (the decision
   * has `fallback: true`) until Redis answers again. Blocks, exemptions and resets are not decided locally: they
   * reject when Redis is unavailable. @default 'deny'
   */
  onError?: OnError;
  /**
   * maxPending — the most commands sent and not yet answered, per server (per master of a Cluster: a hung node
   * costs only the checks of its own keys); past it a check of a key on that server answers by `onError` at once,
   * so a hung server cannot grow a queue without bound. @default 10_000
   */
  maxPending?: number;
  /** fallbackMaxKeys — `maxKeys` of the `'memory'` fallback store. @default 100_000 */
  fallbackMaxKeys?: number;
  /**
   * coalesce — write the checks sent in the same tick to the socket in one go: the store corks the client's sockets
   * (every node's, for a Cluster) at the first check of a tick and uncorks them at its end (`process.nextTick`), so
   * 256 concurrent checks cost one `writev` instead of 256 `write` system calls, on the app server and on Redis.
   * Adds no latency (nothing waits for another event-loop turn). Off: one write per command, as ioredis does.
   * @default true
   */
  coalesce?: boolean;
  /**
   * wait — after the script calls that may write (a check, a compound check, a block…), Redis's `WAIT replicas
   * timeout` on the same connection, sent with them (one round trip; one WAIT per tick covers every call of the tick):
   * a call is answered once `replicas` replicas acknowledged its write or `timeout` ms passed, whichever is first.
   * WAIT blocks its connection, so one is in flight at a time and the writes sent meanwhile share the next: a call
   * may wait two WAIT timeouts when replicas do not answer (a master left without replicas), so keep `timeout` under
   * half the store's `timeout`. Replication stays asynchronous (a WAIT that
   * times out still answers; `waitShortfalls` counts those), but a charge acknowledged after a successful WAIT
   * survives a failover to a replica that acknowledged it. A standalone or Sentinel client only (a Cluster's WAIT
   * would go to a random node). Costs the replica's round trip on every check: see docs/redis.md. @default undefined
   * @example redisStore({ client, wait: { replicas: 1, timeout: 50 } })
   */
  wait?: { replicas: number; timeout: number };
}

const REDIS_STORE_OPTIONS: ReadonlySet<string> = new Set(['client', 'prefix', 'timeout', 'onError', 'maxPending', 'fallbackMaxKeys', 'coalesce', 'wait']);

/** Corkable — a socket the store can cork for a tick (net.Socket, tls.TLSSocket). */
interface Corkable {
  cork(): void;
  uncork(): void;
  readonly writable?: boolean;
}

/** StoreUnavailableError — why a Redis call was given up: an error, a timeout, a disconnected client, too many pending. */
export class StoreUnavailableError extends Error {
  constructor(message: string, cause?: unknown) {
    super(`ratekeeper/redis: ${message}`, cause === undefined ? undefined : { cause });
    this.name = 'StoreUnavailableError';
  }
}

/**
 * CommandClass — ioredis's Command, when ioredis can be loaded (it is the store's peer dependency): checks are then sent
 * as one Command each through the client's sendCommand, past ioredis's per-call argument handling and auto-pipelining
 * (the store coalesces its own writes, below). Without it, the store calls the client's methods. ioredis is CommonJS,
 * so it is loaded with require: no top-level await, so that CommonJS code can `require('ratekeeper/redis')`.
 */
type CommandCtor = new (name: string, args: string[], options: { replyEncoding: null; keyPrefix?: string }) => object;
const CommandClass: CommandCtor | undefined = (() => {
  try {
    return (createRequire(import.meta.url)('ioredis') as { Command?: CommandCtor }).Command;
  } catch {
    return undefined;
  }
})();

/** DOWN — client states in which a command would only wait in the client's offline queue. */
const DOWN = new Set(['reconnecting', 'close', 'end', 'disconnecting']);

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
function learnOffset(b: Budget, wall: number, local: number): void {
  if (!(wall >= 0)) return;
  const sample = wall - local;
  if (!(sample <= b.offset) || local - b.offsetAt > OFFSET_RENEW) {
    b.offset = sample;
    b.offsetAt = local;
  }
}

/**
 * deadlineOf — the deadline a call given up at `at` (performance.now() ms) carries, on the server's clock: never later
 * than the server's time when the store gives up on it (the offset is a lower bound), so a script that starts after
 * that changes nothing; and a margin earlier (a tenth of the timeout, at most 25 ms), so that the reply of a script
 * that did run in time has that long to arrive before the store gives up. Undefined while the offset is unknown (the
 * first calls to a server).
 */
function deadlineOf(b: Budget, at: number, timeout: number): string | undefined {
  const o = b.offset;
  return o === o ? String(at - (timeout < 250 ? timeout / 10 : 25) + o) : undefined;
}

/** Deadline — one call waiting for its answer or its timeout, whichever comes first. */
export interface Deadline {
  at: number;
  done: boolean;
  fail: (e: Error) => void;
}

/**
 * RedisStore — state in Redis (standalone or Cluster), one EVALSHA per check for the whole policy, decided by the
 * Lua twin of core/policy.ts. Keys of one client share a hash slot, so the script never gets CROSSSLOT.
 */
export class RedisStore implements Store {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly timeout: number;
  readonly onError: OnError;
  readonly maxPending: number;
  /** pending — commands sent and not yet settled by the client, over all servers (each server's budget <= maxPending). */
  pending = 0;
  /** solo — the budget of a standalone client; budgets — a Cluster's, by master ('host:port'). */
  private readonly solo: Budget = { node: 'redis', pending: 0, offset: NaN, offsetAt: 0 };
  private readonly budgets = new Map<string, Budget>();
  /** nodeOf — the master serving a slot, for a Cluster client (undefined: a standalone client). */
  private readonly nodeOf: ((slot: number) => string | undefined) | undefined;
  /** failures — calls answered by the failure policy since the store was made. */
  failures = 0;
  /** lastError — the latest reason a call was answered by the failure policy. */
  lastError: Error | undefined;
  /** fallback — the local store of onError 'memory'; fallbackMaxKeys — its maxKeys (and the most overrides it remembers per policy). */
  readonly fallback: MemoryStore | undefined;
  readonly fallbackMaxKeys: number;
  readonly coalesce: boolean;
  /** corked — the sockets corked during this tick (all uncorked at its end), or undefined when none is. */
  private corked: Corkable[] | undefined;
  /** deadlines — calls in flight in the order sent, so in deadline order (one timeout per store); done ones are popped lazily. */
  private readonly deadlines: Deadline[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  /** evalshaBuffer, evalBuffer — send a check's command (one key; now, cost, deadline), the reply kept as bytes. */
  readonly evalshaBuffer: (sha: string, key: string, now: string | undefined, cost: string, deadline: string | undefined) => Promise<unknown>;
  readonly evalBuffer: (text: string, key: string, now: string | undefined, cost: string, deadline: string | undefined) => Promise<unknown>;
  private readonly overrideSet = indexed('override');
  private readonly overrideClear = indexed('unoverride');
  private readonly resetState = opScript('reset');

  constructor(options: RedisStoreOptions) {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`redisStore takes an options object like { client }, got ${show(options)}`);
    checkOptions(options, REDIS_STORE_OPTIONS, 'redisStore');
    const given = typeof options.client === 'object' && options.client !== null ? options.client : undefined;
    const c = (isNodeRedis(given) ? new NodeRedisAdapter(given!) : given) as RedisClient | undefined;
    if (typeof c !== 'object' || c === null || typeof c.evalsha !== 'function' || typeof c.eval !== 'function' || typeof c.callBuffer !== 'function') {
      throw new RatekeeperError(`redisStore.client must be an ioredis Redis or Cluster or a node-redis client or cluster, got ${show(options.client)}`);
    }
    this.client = c;
    const cluster = c as RedisClient & { isCluster?: boolean; slots?: string[][]; nodeOf?: (slot: number) => string | undefined };
    if (typeof cluster.nodeOf === 'function') {
      if (cluster.isCluster === true) this.nodeOf = cluster.nodeOf.bind(cluster);
    } else if (cluster.isCluster === true) {
      this.nodeOf = (slot) => cluster.slots?.[slot]?.[0];
    }
    // How a check is sent: one ioredis Command through sendCommand when ioredis is there (the leanest path, and it
    // leaves batching to the store's coalescing); else the client's evalshaBuffer (callBuffer loses the command's name
    // under ioredis auto-pipelining); else callBuffer. The common check (server clock, cost 1) sends no ARGV.
    const args = (head: string, key: string, now: string | undefined, cost: string, deadline: string | undefined): string[] =>
      deadline !== undefined ? [head, '1', key, now ?? '', cost, deadline] : now === undefined && cost === '1' ? [head, '1', key] : [head, '1', key, now ?? '', cost];
    const direct = c as RedisClient & { sendCommand?: (command: object) => Promise<unknown>; options?: { keyPrefix?: string } };
    const methods = c as RedisClient & { evalshaBuffer?: (...a: (string | number)[]) => Promise<unknown>; evalBuffer?: (...a: (string | number)[]) => Promise<unknown> };
    const Cmd = CommandClass;
    if (Cmd !== undefined && typeof direct.sendCommand === 'function') {
      const keyPrefix = direct.options?.keyPrefix;
      const opts = keyPrefix ? { replyEncoding: null, keyPrefix } : { replyEncoding: null };
      this.evalshaBuffer = (sha, key, now, cost, dl) => direct.sendCommand!(new Cmd('evalsha', args(sha, key, now, cost, dl), opts));
      this.evalBuffer = (text, key, now, cost, dl) => direct.sendCommand!(new Cmd('eval', args(text, key, now, cost, dl), opts));
    } else if (typeof methods.evalshaBuffer === 'function' && typeof methods.evalBuffer === 'function') {
      this.evalshaBuffer = (sha, key, now, cost, dl) => methods.evalshaBuffer!(...args(sha, key, now, cost, dl));
      this.evalBuffer = (text, key, now, cost, dl) => methods.evalBuffer!(...args(text, key, now, cost, dl));
    } else {
      this.evalshaBuffer = (sha, key, now, cost, dl) => c.callBuffer('EVALSHA', ...args(sha, key, now, cost, dl));
      this.evalBuffer = (text, key, now, cost, dl) => c.callBuffer('EVAL', ...args(text, key, now, cost, dl));
    }
    const prefix = options.prefix ?? 'rk:';
    if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
      throw new RatekeeperError(`redisStore.prefix must be a string without { or } (the client's part of the key is the hash tag), got ${show(prefix)}`);
    }
    this.prefix = prefix;
    const timeout = options.timeout ?? 1000;
    if (typeof timeout !== 'number' || !(timeout > 0) || timeout > 2 ** 31 - 1) {
      throw new RatekeeperError(`redisStore.timeout must be a number of ms > 0, got ${show(options.timeout)}`);
    }
    this.timeout = timeout;
    const onError = options.onError ?? 'deny';
    if (onError !== 'deny' && onError !== 'allow' && onError !== 'memory') {
      throw new RatekeeperError(`redisStore.onError must be 'deny', 'allow' or 'memory', got ${show(options.onError)}`);
    }
    this.onError = onError;
    const maxPending = options.maxPending ?? 10_000;
    if (!Number.isSafeInteger(maxPending) || maxPending < 1) throw new RatekeeperError(`redisStore.maxPending must be an integer >= 1, got ${show(maxPending)}`);
    this.maxPending = maxPending;
    const fallbackMaxKeys = options.fallbackMaxKeys ?? 100_000;
    if (!Number.isSafeInteger(fallbackMaxKeys) || fallbackMaxKeys < 1) throw new RatekeeperError(`redisStore.fallbackMaxKeys must be an integer >= 1, got ${show(options.fallbackMaxKeys)}`);
    this.fallbackMaxKeys = fallbackMaxKeys;
    if (onError === 'memory') this.fallback = new MemoryStore({ maxKeys: fallbackMaxKeys });
    if (options.coalesce !== undefined && typeof options.coalesce !== 'boolean') throw new RatekeeperError(`redisStore.coalesce must be a boolean, got ${show(options.coalesce)}`);
    this.coalesce = options.coalesce ?? true;
    if (options.wait !== undefined) {
      const w = options.wait;
      if (typeof w !== 'object' || w === null || !Number.isSafeInteger(w.replicas) || w.replicas < 1 || !Number.isSafeInteger(w.timeout) || w.timeout < 1) {
        throw new RatekeeperError(`redisStore.wait must be { replicas: integer >= 1, timeout: integer ms >= 1 }, got ${show(w)}`);
      }
      if (2 * w.timeout >= this.timeout) throw new RatekeeperError(`redisStore.wait.timeout must be under half the store's timeout (${this.timeout} ms): a call may wait two WAITs, got ${w.timeout}`);
      if ((c as { isCluster?: boolean }).isCluster === true) throw new RatekeeperError('redisStore.wait needs a standalone or Sentinel client: a Cluster would send WAIT to another node than the write');
      const call = (c as { call?: (...a: (string | number)[]) => Promise<unknown> }).call;
      if (typeof call !== 'function') throw new RatekeeperError('redisStore.wait needs an ioredis client (its call method sends WAIT on the write\'s connection)');
      const replicas = String(w.replicas);
      const ms = String(w.timeout);
      // WAIT blocks its connection until it answers, so at most one is in flight: the writes sent meanwhile wait for
      // the next one, sent as soon as the current one answers (behind them: WAIT covers every earlier write of its
      // connection). A call thus waits at most two WAIT timeouts beyond its own round trip.
      let next: { promise: Promise<number>; resolve: (n: number) => void } | undefined;
      let inFlight = false;
      const flush = (): void => {
        const batch = next!;
        next = undefined;
        inFlight = true;
        call.call(c, 'WAIT', replicas, ms).then((n) => Number(n), () => -1).then((n) => {
          inFlight = false;
          batch.resolve(n);
          if (next !== undefined) flush();
        });
      };
      this.waitFor = (p) => {
        if (next === undefined) {
          let resolve!: (n: number) => void;
          next = { promise: new Promise<number>((r) => (resolve = r)), resolve };
          if (!inFlight) process.nextTick(flush);
        }
        return Promise.all([p, next.promise]).then(([reply, acked]) => {
          // a WAIT that failed (the connection dropped) leaves the write's replication unknown: not acknowledged
          if (acked < 0) throw new StoreUnavailableError('WAIT did not answer: the write may not be replicated');
          if (acked < w.replicas) this.waitShortfalls++;
          return reply;
        });
      };
    }
  }

  /** waitFor — with `wait`: a write's promise joined with the WAIT sent right behind it (undefined: no WAIT). */
  readonly waitFor: ((p: Promise<unknown>) => Promise<unknown>) | undefined;
  /** waitShortfalls — WAITs that answered fewer replicas than asked (timed out): charges a failover may lose. */
  waitShortfalls = 0;

  /** cork — at the first check of a tick, corks the client's sockets until the tick ends (coalesce). */
  cork(): void {
    if (this.corked !== undefined || !this.coalesce) return;
    const c = this.client as RedisClient & { isCluster?: boolean; stream?: unknown; nodes?: () => { stream?: unknown }[] };
    const streams = c.isCluster === true && typeof c.nodes === 'function' ? c.nodes().map((n) => n.stream) : [c.stream];
    const corked: Corkable[] = [];
    for (const x of streams) {
      const sock = x as Corkable | undefined;
      if (sock !== undefined && sock !== null && typeof sock.cork === 'function' && sock.writable !== false) {
        sock.cork();
        corked.push(sock);
      }
    }
    this.corked = corked;
    process.nextTick(this.uncork);
  }

  private readonly uncork = (): void => {
    const corked = this.corked;
    this.corked = undefined;
    if (corked !== undefined) for (const sock of corked) sock.uncork();
  };

  attach(policy: Policy, namespace = ''): RedisBound {
    return new RedisBound(this, policy, namespace);
  }

  /**
   * succeed — binds `to`, which replaces `from` (a limiter's rules changed). Policies of one id and compatible rules
   * name one key per client (policyId), so the clients' state, blocks and exemptions are already `to`'s; when the new
   * rules may take longer to forgive a state (retime.ts `lengthens`: a lower rate or limit, a longer half-life), every
   * key is rewritten under them in the background (`retimed`), so that an expiry set under the old rules does not
   * forgive early; judged at `now` (ms; undefined: the server's clock, as the checks). Without an id the keys are
   * named by the rules: undefined (the clients start fresh).
   */
  succeed(from: Policy, to: Policy, now: number | undefined, namespace = ''): RedisBound | undefined {
    if (to.id === undefined || from.id !== to.id || !to.compatible(from)) return undefined;
    // the 'memory' fallback's table (what this instance decided while Redis was away, its remembered blocks) carries too
    this.fallback?.succeed(from, to, localClock());
    const bound = this.attach(to, namespace);
    if (lengthens(from, to)) bound.retimed = retime(bound.scanner(now), this.prefix, bound.id).catch(() => -1);
    return bound;
  }

  /** compounds — compound scripts by the tuple of their parts' policies (RedisBound.tupleId, joined); at most MAX_COMPOUNDS, oldest dropped first. */
  private readonly compounds = new Map<string, Script>();

  /** compound — the compound script of these parts' policies, compiled once per tuple. */
  compound(bounds: readonly RedisBound[]): Script {
    let id = bounds[0].tupleId;
    for (let i = 1; i < bounds.length; i++) id += ',' + bounds[i].tupleId;
    let script = this.compounds.get(id);
    if (script === undefined) {
      script = compoundScript(bounds.map((b) => b.policy));
      if (this.compounds.size >= MAX_COMPOUNDS) this.compounds.delete(this.compounds.keys().next().value as string);
      this.compounds.set(id, script);
    }
    return script;
  }

  /**
   * evaluateAll — the parts decided all-or-nothing in one round trip: one script (compound) deciding every part on
   * its stored state, then charging all or none, within the store's timeout and pending bound; the failure policy
   * answers every part when Redis does not. Undefined (checkAll then decides and refunds) on a Cluster when the
   * parts' keys are in several slots, and when two parts share one Redis key (two limiters of the same rules).
   */
  evaluateAll(parts: readonly Part[], now: number | undefined): Promise<Decision[]> | undefined {
    const n = parts.length;
    const bounds = new Array<RedisBound>(n);
    const keys = new Array<string>(n);
    const args = new Array<string>(n + 1);
    args[0] = now === undefined ? '' : String(now);
    for (let i = 0; i < n; i++) {
      const b = parts[i].bound as RedisBound;
      bounds[i] = b;
      keys[i] = b.redisKey(parts[i].key);
      args[i + 1] = String(parts[i].cost);
    }
    if (n > 1) {
      if (new Set(keys).size < n) return undefined;
      if ((this.client as { isCluster?: boolean }).isCluster === true && !oneSlot(parts)) return undefined;
    }
    const script = this.compound(bounds);
    this.cork();
    return this.run(script, keys, args, true).then(
      (reply) => {
        const list = reply as Buffer[];
        let decisions: Decision[];
        try {
          decisions = list.map((r, i) => bounds[i].decision(r));
        } catch (e) {
          return this.failedAll(new StoreUnavailableError(`unreadable reply: ${e instanceof Error ? e.message : String(e)}`, e), parts, now);
        }
        // a part its own rules refused starts its policy's automatic block (RedisBound.autoBlock), answered once set
        let blocks: Promise<Decision>[] | undefined;
        for (let i = 0; i < n; i++) {
          const p = bounds[i].policy;
          if (p.blockFor > 0 && p.autoBlocks(decisions[i], parts[i].cost) && list[i].readDoubleLE(0) === 0) {
            (blocks ??= []).push(bounds[i].autoBlock(parts[i].key, now, list[i], decisions[i]));
          }
        }
        return blocks === undefined ? decisions : Promise.all(blocks).then(() => decisions);
      },
      (e: unknown) => this.failedAll(e, parts, now),
    );
  }

  /** failedAll — the failure policy's answer for a compound request Redis did not decide: all-or-nothing on the local store for 'memory'. */
  failedAll(e: unknown, parts: readonly Part[], now: number | undefined): Decision[] {
    this.noteFailure(e);
    const fallback = this.fallback;
    if (fallback !== undefined) {
      const local = parts.map((p): Part => ({ bound: (p.bound as RedisBound).fallbackTable as MemoryTable, key: p.key, cost: p.cost }));
      const decisions = fallback.evaluateAll(local, now ?? (parts[0].bound as RedisBound).localNow());
      for (const d of decisions) d.fallback = true;
      return decisions;
    }
    return parts.map((p) => (p.bound as RedisBound).unavailable());
  }

  /** close — stops the timeout timer and forgets the fallback's state; the client is the caller's to close. */
  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.fallback?.close();
  }

  /**
   * run — a script by SHA (EVAL when the server answers NOSCRIPT, which also caches it there), within the store's
   * timeout and pending bound (the budget of its first key's server). `deadline`: the small scripts (override,
   * unoverride, reset) get their deadline as ARGV[1] (deadline.lua): one that would start after the store gave up on
   * it changes nothing. Rejects with a StoreUnavailableError; never leaves a rejection unhandled.
   */
  run(script: Script, keys: string[], args: (string | number)[], binary = false, deadline = false): Promise<unknown> {
    const budget = this.budgetOf(keys[0]);
    const refused = this.refuse(budget);
    if (refused !== undefined) return Promise.reject(refused);
    const at = performance.now() + this.timeout;
    if (deadline) args = [deadlineOf(budget, at, this.timeout) ?? '', ...args];
    return new Promise((resolve, reject) => {
      const d: Deadline = { at, done: false, fail: reject };
      this.track(d);
      this.pending++;
      budget.pending++;
      const settle = (): void => {
        this.pending--;
        budget.pending--;
      };
      const c = this.client;
      const w = this.waitFor;
      const sent = binary ? c.callBuffer('EVALSHA', script.sha, keys.length, ...keys, ...args) : c.evalsha(script.sha, keys.length, ...keys, ...args);
      (w === undefined ? sent : w(sent))
        .catch((e: unknown) => {
          if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e;
          const again = binary ? c.callBuffer('EVAL', script.text, keys.length, ...keys, ...args) : c.eval(script.text, keys.length, ...keys, ...args);
          return w === undefined ? again : w(again);
        })
        .then(
          (v) => {
            settle();
            if (!d.done) {
              d.done = true;
              resolve(v);
            }
          },
          (e: unknown) => {
            settle();
            if (!d.done) {
              d.done = true;
              reject(new StoreUnavailableError(e instanceof Error ? e.message : String(e), e));
            }
          },
        );
    });
  }

  /** refuse — why a call must be answered by the failure policy at once (a disconnected client, too many pending on its server), or undefined. */
  refuse(budget: Budget): StoreUnavailableError | undefined {
    const status = this.client.status;
    if (status !== undefined && status !== 'ready' && DOWN.has(status)) return new StoreUnavailableError(`the client is ${status}`);
    if (budget.pending >= this.maxPending) return new StoreUnavailableError(`${budget.pending} commands are pending on ${budget.node} (maxPending)`);
    return undefined;
  }

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

  /** setOverride — sets the override of the client value `key`, and files it in `index` (see lua/index.lua). */
  setOverride(key: string, request: OverrideRequest, now: number | undefined, index?: IndexRef): Promise<unknown> {
    const args: string[] = [
      now === undefined ? '' : String(now), request.kind === 'block' ? 'b' : 'e', request.for === Infinity ? 'inf' : String(request.for),
      index?.member ?? '', index?.idx ?? '', index?.det ?? '',
    ];
    if (request.reason !== undefined || request.ifNone === true) args.push(request.reason ?? '');
    if (request.ifNone === true) args.push('1');
    this.listed = undefined;
    return this.run(this.overrideSet, [key], args, false, true).finally(() => {
      this.listed = undefined;
    });
  }

  clearOverride(key: string, kind: Override['kind'], index?: IndexRef): Promise<unknown> {
    const k = kind === 'block' ? 'b' : 'e';
    this.listed = undefined;
    return this.run(this.overrideClear, [key], index === undefined ? [k] : [k, index.member, index.idx, index.det], false, true).finally(() => {
      this.listed = undefined;
    });
  }

  reset(key: string): Promise<unknown> {
    return this.run(this.resetState, [key], [], false, true);
  }

  // ---- Observation (the operators' view): commands of the listing. ----

  /** isCluster — whether the client is a Redis Cluster (the index then has one group per hash slot). */
  get isCluster(): boolean {
    return (this.client as { isCluster?: boolean }).isCluster === true;
  }

  /** callBuffer — one plain command within the store's timeout, its reply kept as bytes. */
  callBuffer(command: string, ...args: string[]): Promise<unknown> {
    return withTimeout(this.client.callBuffer(command, ...args), this.timeout);
  }

  /** serverTime — the server's clock (TIME), ms. */
  async serverTime(): Promise<number> {
    const r = (await this.callBuffer('TIME')) as Buffer[];
    return Number(String(r[0])) * 1000 + Number(String(r[1])) / 1000;
  }

  /** probe — the health probe (health.ts), made by the first `health()`. */
  private probe: HealthProbe | undefined;

  /**
   * health — which servers answer (every master of a Cluster, the server of a standalone client) and since when, for
   * a health check: PINGs at most once per second (each given up after the store's timeout, at most 500 ms), the
   * latest answer in between. Never rejects.
   */
  health(): Promise<StoreHealth> {
    this.probe ??= new HealthProbe(this.client as object, 1000, Math.min(this.timeout, 500), () => [...(this.placement()?.primary.keys() ?? [])]);
    return this.probe.read();
  }

  /** placement — the primary tag of every master (listing.ts), from the client's slot table; undefined on a standalone server. */
  placement(): Placement | undefined {
    const nodeOf = this.nodeOf;
    return nodeOf === undefined ? undefined : new Placement(nodeOf, slotTag);
  }

  /** readHash — a hash of the operators' view (a bucket, the registry) as a flat list of fields and values, kept as bytes (lua/bucket.lua). */
  async readHash(key: string, field?: string): Promise<unknown> {
    return this.run(bucketScript, [key], field === undefined ? [] : [field], true);
  }

  /** registered — the tags this store registered (or found registered), so that an override pays for it once per tag. */
  private readonly registered = new Set<string>();

  /**
   * register — files a bucket's tag in the registry (Cluster), so that listings read it even once it is no master's
   * primary bucket; once per tag and process (a listing that removes a tag forgets it here too).
   */
  async register(tag: string, add = true): Promise<void> {
    if (add && this.registered.has(tag)) return;
    const registry = registryOf(this.prefix);
    await this.run(registerScript, [registry], [tag, add ? '1' : '0']);
    if (add) this.registered.add(tag);
    else this.registered.delete(tag);
  }

  /** listed — the latest listing of the index (every policy) and when it was asked for (local ms); dropped by a change made through this store. */
  private listed: { at: number; list: Promise<Listed[]> } | undefined;

  /**
   * listing — every block and exemption in force in the index, for every policy of this store. With `maxAge` (and
   * no explicit `now`) a listing that recent is reused: every limiter of a store polled by a dashboard shares one.
   */
  listing(now: number | undefined, maxAge = 0): Promise<Listed[]> {
    if (now !== undefined) return this.readIndex(now);
    const at = Date.now();
    const cached = this.listed;
    if (cached !== undefined && at - cached.at < maxAge && at >= cached.at) return cached.list;
    const list = this.readIndex(undefined);
    const entry = { at, list };
    this.listed = entry;
    list.catch(() => {
      if (this.listed === entry) this.listed = undefined;
    });
    return list;
  }

  /**
   * readIndex — the listing itself (listing.ts): the registry (Cluster), then one bucket per master and per registered
   * tag, at once; entries that ended are pruned, entries found away from their client's master are moved there
   * (refile.lua, unfile.lua) and listed when their override still holds; a registered bucket left empty and no
   * longer any master's leaves the registry (and is put back if it was written meanwhile).
   */
  private async readIndex(now: number | undefined): Promise<Listed[]> {
    const place = this.placement();
    const tags = place === undefined ? [STANDALONE_TAG] : place.tags();
    const registered = new Set<string>();
    // one round trip: the registry, the primary buckets and the clock at once; then the registered buckets that are
    // no master's primary one (none in a steady state)
    const [t, reg, replies] = await Promise.all([
      now ?? this.serverTime(),
      place === undefined ? undefined : this.readHash(registryOf(this.prefix)),
      Promise.all(tags.map((tag) => this.readHash(bucketOf(this.prefix, tag).det))),
    ]);
    if (Array.isArray(reg)) for (let i = 0; i < reg.length; i += 2) registered.add(String(reg[i]));
    const extra = [...registered].filter((tag) => !tags.includes(tag));
    if (extra.length > 0) {
      replies.push(...await Promise.all(extra.map((tag) => this.readHash(bucketOf(this.prefix, tag).det))));
      tags.push(...extra);
    }
    const found = new Map<string, Listed>();
    const away: { bucket: Bucket; member: string; value: Buffer; listed: Listed }[] = [];
    const ended = new Set<string>();
    const kept = new Map<string, number>();
    replies.forEach((reply, i) => {
      const tag = tags[i];
      if (!Array.isArray(reply)) return;
      for (let j = 0; j + 1 < reply.length; j += 2) {
        const member = String(reply[j]);
        const parts = splitMember(member);
        const value = reply[j + 1] as Buffer;
        const e = parts === undefined ? undefined : readEntry(parts.encoded, value);
        if (parts === undefined || e === undefined) continue;
        if (!(e.until > t)) {
          ended.add(tag);
          continue;
        }
        const listed: Listed = { policy: parts.policy, entry: e };
        if (place === undefined || place.tagOfKey(parts.encoded) === tag) {
          found.set(member, listed);
          kept.set(tag, (kept.get(tag) ?? 0) + 1);
        } else {
          away.push({ bucket: bucketOf(this.prefix, tag), member, value, listed });
        }
      }
    });
    for (const a of away) {
      const { policy, entry } = a.listed;
      const home = place!.tagOfKey(entry.key);
      try {
        if (home === undefined) throw new Error('the slot\'s master is not known');
        const to = bucketOf(this.prefix, home);
        const holds = await this.run(refileScript, [`${this.prefix}{${entry.key}}:${policy}`], [to.idx, to.det, a.member, a.value as unknown as string, entry.until === Infinity ? 'inf' : String(entry.until), entry.kind === 'block' ? 'b' : 'e'], false, true);
        if (holds === 1 && !found.has(a.member)) found.set(a.member, a.listed);
        await this.run(unfileScript, [a.bucket.idx, a.bucket.det], [a.member, a.value as unknown as string]);
      } catch {
        // moved by the next listing; listed meanwhile as found
        if (!found.has(a.member)) found.set(a.member, a.listed);
        kept.set(a.bucket.tag, (kept.get(a.bucket.tag) ?? 0) + 1);
      }
    }
    const primary = new Set(place?.tags() ?? []);
    await Promise.all([
      ...[...ended].map((tag) => {
        const b = bucketOf(this.prefix, tag);
        return this.run(pruneScript, [b.idx, b.det], [now === undefined ? '' : String(now)]);
      }),
      ...[...registered].filter((tag) => !primary.has(tag) && !((kept.get(tag) ?? 0) > 0)).map(async (tag) => {
        await this.register(tag, false);
        // written between the read and the removal: registered again (a writer registers after it writes)
        const again = await this.readHash(bucketOf(this.prefix, tag).det);
        if (Array.isArray(again) && again.length > 0) await this.register(tag);
      }),
    ]);
    return [...found.values()];
  }

  // ---- end of observation ----

  /** fail — counts a failure and remembers why. */
  noteFailure(e: unknown): void {
    this.failures++;
    this.lastError = e instanceof Error ? e : new Error(String(e));
  }

  /** track — files a call's deadline and makes sure the one timer is armed for the earliest. */
  track(d: Deadline): void {
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
}

/**
 * Check — one check in flight: its deadline in the store's queue and the caller's resolve. Settles once (done): with
 * the script's decision, or the failure policy's when Redis errs or the deadline passes first.
 */
class Check implements Deadline {
  done = false;
  constructor(
    readonly bound: RedisBound, readonly key: string, readonly cost: number, readonly now: number | undefined,
    readonly at: number, readonly budget: Budget, private readonly resolve: (d: Decision) => void,
  ) {}

  answer(reply: Buffer): void {
    this.bound.store.pending--;
    this.budget.pending--;
    learnOffset(this.budget, this.bound.wallOf(reply), performance.now());
    if (this.done) return;
    this.done = true;
    let d: Decision;
    try {
      d = this.bound.decision(reply);
      if (this.bound.remembers) this.bound.learn(this.key, this.now, reply);
    } catch (e) {
      d = this.bound.failed(new StoreUnavailableError(`unreadable reply: ${e instanceof Error ? e.message : String(e)}`, e), this.key, this.cost, this.now);
      this.resolve(d);
      return;
    }
    if (this.bound.policy.blockFor > 0 && this.bound.policy.autoBlocks(d, this.cost) && reply.readDoubleLE(0) === 0) {
      this.bound.autoBlock(this.key, this.now, reply, d).then(this.resolve);
      return;
    }
    this.resolve(d);
  }

  /** error — a failed command: NOSCRIPT is retried once with the script's text (still pending), anything else is a failure. */
  error(e: unknown, retried = false): void {
    if (!retried && !this.done && e instanceof Error && e.message.startsWith('NOSCRIPT')) {
      this.bound.retry(this);
      return;
    }
    this.bound.store.pending--;
    this.budget.pending--;
    if (this.done) return;
    this.done = true;
    this.resolve(this.bound.failed(new StoreUnavailableError(e instanceof Error ? e.message : String(e), e), this.key, this.cost, this.now));
  }

  /** fail — the deadline passed first (the command still counts as pending until it settles). */
  fail(e: Error): void {
    this.resolve(this.bound.failed(e, this.key, this.cost, this.now));
  }
}

/** encodeKey — the client key made safe inside a hash tag, injectively: %, {, } and lone surrogates are %-escaped. */
const UNSAFE = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
export function encodeKey(key: string): string {
  if (!UNSAFE.test(key)) return key;
  return key.replace(UNSAFE_ALL, (c) => (c.length === 1 && c.charCodeAt(0) >= 0xd800 ? `%u${c.charCodeAt(0).toString(16)}` : c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

/**
 * RedisBound — one policy's view of the Redis store. One string key per client: `<prefix>{<encoded client key>}:<policy id>`,
 * holding the block or exemption, the rule state and the sliding log (lua/record.lua); the braces make the client's
 * part the hash tag.
 */
export class RedisBound implements BoundStore {
  readonly sync = false;
  readonly ownClock = true;
  readonly id: string;
  readonly script: Script;
  /** tupleId — names this bound's part of a compound script: its rules (the check script's SHA) and whether it is dry-run. */
  readonly tupleId: string;
  /** fallbackTable — the policy's table in the 'memory' fallback store. */
  readonly fallbackTable: MemoryTable | undefined;
  private refunder: Script | undefined;
  /** lastLocal — the fallback's clock, never stepping back. */
  private lastLocal = -Infinity;
  /**
   * keyHead, keyTail — what surrounds the encoded client key in its Redis key: `<prefix>{<encoded namespace>` and
   * `}:<policy id>`. encodeKey escapes character by character, so head + encodeKey(key) is what encodeKey(namespace +
   * key) was before the namespace moved out of the key: Redis keys are byte-identical to a full key's.
   */
  private readonly keyHead: string;
  /** space — the encoded namespace (the limiter's, '' for none): the head of every hash tag and index member of this bound. */
  readonly space: string;
  private readonly keyTail: string;
  /** measures — per rule, 1 when its reply carries a rate, 2 a delay (earrrl and exponential; leakyBucket). */
  private readonly measures: Uint8Array;
  /** rulesBytes — the bytes of the rules' part of a reply (where an override's now and end follow). */
  private readonly rulesBytes: number;
  /**
   * remembers — onError 'memory': the blocks and exemptions this instance set, lifted or met in a reply are kept in
   * the fallback too, so that they hold while Redis is away. `overridden` — the keys the fallback holds one for
   * (oldest first; at most fallbackMaxKeys), so that a reply without one lifts it.
   */
  readonly remembers: boolean;
  private readonly overridden = new Map<string, Override['kind']>();

  constructor(readonly store: RedisStore, readonly policy: Policy, namespace = '') {
    this.id = policyId(policy);
    this.script = policyScript(policy);
    // the check script's SHA names the rules themselves (policies of one id with other limits share the key id, not a script)
    this.tupleId = policy.dryRun ? `${this.script.sha}~dry` : this.script.sha;
    this.fallbackTable = store.fallback?.attach(policy);
    this.space = encodeKey(namespace);
    this.keyHead = `${store.prefix}{${this.space}`;
    this.keyTail = `}:${this.id}`;
    this.measures = new Uint8Array(policy.rules.map((r) => (hasRate(r.algorithm) ? 1 : hasDelay(r.algorithm) ? 2 : 0)));
    this.rulesBytes = 8 + this.measures.reduce((a, m) => a + (m === 0 ? 32 : 40), 0);
    this.remembers = this.fallbackTable !== undefined;
  }

  /**
   * remember — keeps a block or exemption in the fallback (`left` ms from the local time of the call, Infinity: until
   * lifted), or lifts the fallback's one (kind undefined).
   */
  private remember(key: string, now: number | undefined, kind: Override['kind'] | undefined, left = 0, reason?: string): void {
    const fb = this.fallbackTable!;
    if (kind === undefined) {
      const held = this.overridden.get(key);
      if (held !== undefined) {
        fb.clearOverride(key, held);
        this.overridden.delete(key);
      }
      return;
    }
    // the oldest lifted first: the fallback's budget of blocks and exemptions refuses a new one past maxKeys
    this.overridden.delete(key);
    if (this.overridden.size >= this.store.fallbackMaxKeys) {
      const oldest = this.overridden.keys().next().value as string;
      this.remember(oldest, undefined, undefined);
    }
    fb.setOverride(key, { kind, for: left, reason }, now ?? this.localNow());
    this.overridden.set(key, kind);
  }

  /** learn — what a check's reply says about the key's block or exemption, kept for the fallback. */
  learn(key: string, now: number | undefined, reply: Buffer): void {
    const kind = reply.readDoubleLE(0);
    if (kind < 2) {
      if (this.overridden.size > 0) this.remember(key, now, undefined);
      return;
    }
    const j = this.rulesBytes;
    const at = reply.readDoubleLE(j);
    const until = reply.readDoubleLE(j + 8);
    this.remember(key, now, kind === 2 ? 'block' : 'exempt', until - at, reply.length > j + 24 ? reply.toString('utf8', j + 25) : undefined);
  }

  /** wallOf — the server's clock in a reply (ms; −1 when the script did not read it): after the rules' part, and after now and the end for an override. */
  wallOf(reply: Buffer): number {
    return reply.length < this.rulesBytes + 8 ? -1 : reply.readDoubleLE(reply.readDoubleLE(0) < 2 ? this.rulesBytes : this.rulesBytes + 16);
  }

  /** redisKey — the client's key in Redis. */
  redisKey(key: string): string {
    return this.keyHead + encodeKey(key) + this.keyTail;
  }

  evaluate(key: string, cost: number, now: number | undefined): Promise<Decision> {
    const store = this.store;
    const redisKey = this.redisKey(key);
    const budget = store.budgetOf(redisKey);
    const refused = store.refuse(budget);
    if (refused !== undefined) return Promise.resolve(this.failed(refused, key, cost, now));
    return new Promise<Decision>((resolve) => {
      const call = new Check(this, key, cost, now, performance.now() + store.timeout, budget, resolve);
      store.track(call);
      store.pending++;
      budget.pending++;
      store.cork();
      const sent = store.evalshaBuffer(this.script.sha, redisKey, now === undefined ? undefined : String(now), cost === 1 ? '1' : String(cost), deadlineOf(budget, call.at, store.timeout));
      // a look (cost 0) writes nothing: no WAIT
      (store.waitFor === undefined || cost === 0 ? sent : store.waitFor(sent))
        .then((reply) => call.answer(reply as Buffer), (e: unknown) => call.error(e));
    });
  }

  /** retry — a check whose script the server did not have (NOSCRIPT: restarted, a new cluster node): EVAL sends the text and caches it there. */
  retry(call: Check): void {
    const { key, cost, now } = call;
    const sent = this.store.evalBuffer(this.script.text, this.redisKey(key), now === undefined ? undefined : String(now), cost === 1 ? '1' : String(cost), deadlineOf(call.budget, call.at, this.store.timeout));
    (this.store.waitFor === undefined || cost === 0 ? sent : this.store.waitFor(sent))
      .then((reply) => call.answer(reply as Buffer), (e: unknown) => call.error(e, true));
  }

  /**
   * autoBlock — starts the policy's automatic block of `key` after decision `d`, which its rules refused at the
   * check's time (the explicit `now`, else the server's clock the script read, in `reply`), so that the block ends
   * exactly where `d.retryAfter` says (Policy.autoBlocked). A second script call, on the client's master: it sets
   * the block only when none is in force (two refusals in one round trip keep the first's end). When it fails, `d`
   * keeps the rules' own retryAfter. Resolves to `d`.
   */
  autoBlock(key: string, now: number | undefined, reply: Buffer, d: Decision): Promise<Decision> {
    const at = now ?? this.wallOf(reply);
    const rules = d.retryAfter;
    const reason = this.policy.autoBlocked(d);
    return this.setOverride(key, { kind: 'block', for: this.policy.blockFor, reason, ifNone: true }, at < 0 ? undefined : at).then(
      () => d,
      () => {
        d.retryAfter = rules;
        return d;
      },
    );
  }

  async setOverride(key: string, request: OverrideRequest, now: number | undefined): Promise<void> {
    const redisKey = this.redisKey(key);
    let index = this.indexOf(key);
    try {
      await this.store.setOverride(redisKey, request, now, index);
    } catch (e) {
      // the bucket is on another master than the client's value (the slot table changed under us): filed in the
      // bucket of the client's own slot, always on its master, from which a listing moves it to its master's
      if (!nonLocal(e)) throw e;
      index = this.indexOf(key, true);
      await this.store.setOverride(redisKey, request, now, index);
    }
    // registered after it is written (listing.ts: a listing that empties the registry of it reads it again), once per
    // tag and process; not awaited (a failure only delays the listing of a bucket that is no master's primary one)
    if (this.store.isCluster) this.store.register(index.tag).catch(() => undefined);
    if (this.remembers) this.remember(key, now, request.kind, request.for, request.reason);
  }

  async clearOverride(key: string, kind: Override['kind']): Promise<void> {
    const redisKey = this.redisKey(key);
    try {
      await this.store.clearOverride(redisKey, kind, this.indexOf(key));
    } catch (e) {
      if (!nonLocal(e)) throw e;
      await this.store.clearOverride(redisKey, kind, this.indexOf(key, true));
    }
    if (this.remembers && this.overridden.get(key) === kind) this.remember(key, undefined, undefined);
  }

  reset(key: string): Promise<void> {
    return this.store.reset(this.redisKey(key)).then(() => undefined);
  }

  /** refund — one round trip of the policy's refund script (lua/policy.lua, `refund`); rejects when Redis does not answer. */
  refund(key: string, cost: number, now: number | undefined, leakyOnly: boolean): Promise<Decision> {
    this.refunder ??= refundScript(this.policy);
    const args = [now === undefined ? '' : String(now), String(cost), leakyOnly ? '1' : '0'];
    return this.store.run(this.refunder, [this.redisKey(key)], args, true).then((reply) => this.decision(reply as Buffer));
  }

  /**
   * retimed — after a succession that lengthened the time to forgive (RedisStore.succeed): the background pass that
   * rewrites every client's key under this policy; resolves to the keys rewritten (−1 when Redis failed it).
   */
  retimed: Promise<number> | undefined;

  /**
   * scanner — the keys of this store on every master (SCAN), and a rewrite of one key under this policy at `now` (ms;
   * undefined: the server's clock) (retime.ts).
   */
  scanner(now: number | undefined): Scanner {
    const store = this.store;
    return {
      scan: async (pattern, batch) => {
        const each = async (call: (cursor: string) => Promise<unknown>): Promise<void> => {
          let cursor = '0';
          do {
            const [next, keys] = (await call(cursor)) as [Buffer | string, (Buffer | string)[]];
            cursor = String(next);
            if (keys.length > 0) await batch(keys.map((k) => String(k)));
          } while (cursor !== '0');
        };
        if (!store.isCluster) return each((c) => store.callBuffer('SCAN', c, 'MATCH', pattern, 'COUNT', '1000'));
        const cluster = store.client as unknown as { nodes?: (role: 'master') => { call(...args: string[]): Promise<unknown> }[] };
        // node-redis's cluster client has no per-node access: no pass (its keys expire as the old rules set them)
        if (typeof cluster.nodes !== 'function') return;
        await Promise.all(cluster.nodes('master').map((node) => each((c) => node.call('SCAN', c, 'MATCH', pattern, 'COUNT', '1000'))));
      },
      rewrite: (key) => {
        this.refunder ??= refundScript(this.policy);
        return store.run(this.refunder, [key], [now === undefined ? '' : String(now), '0', '0'], true);
      },
    };
  }

  /** localNow — the fallback's clock, never stepping back. */
  localNow(): number {
    const local = localClock(); // monotonic, anchored to wall time: a wall-clock step neither freezes nor jumps it
    if (local > this.lastLocal) this.lastLocal = local;
    return this.lastLocal;
  }

  // ---- Observation (the operators' view): the index of blocks and exemptions, and the shared summaries. ----

  /**
   * indexOf — the bucket `key`'s override is filed in (listing.ts, lua/index.lua) and its member there: the one
   * bucket on a standalone server; on a Cluster the primary bucket of the master serving the key's slot (`own`, or
   * that master unknown: the bucket of the key's own slot, on the same master).
   */
  indexOf(key: string, own = false): IndexRef {
    const encoded = this.space + encodeKey(key);
    let tag = STANDALONE_TAG;
    if (this.store.isCluster) {
      const slot = tagSlot(encoded);
      tag = (own ? undefined : this.store.placement()?.tagOf(slot)) ?? slotTag(slot);
    }
    return { ...bucketOf(this.store.prefix, tag), member: memberOf(this.id, encoded) };
  }

  /** override — `key`'s block or exemption in force at `now` (undefined: the server's clock), from the index. */
  async override(key: string, now: number | undefined): Promise<OverrideEntry | undefined> {
    const { det, member } = this.indexOf(key);
    const [raw, t] = await Promise.all([this.store.readHash(det, member), now ?? this.store.serverTime()]);
    const e = raw instanceof Buffer ? readEntry(key, raw) : undefined;
    return e !== undefined && e.until > t ? e : undefined;
  }

  /**
   * overrides — every block and exemption of this policy in force at `now` (undefined: the server's clock), from the
   * store's listing of the index (listing.ts: one bucket read per master, shared by every limiter of the store and
   * reused for `maxAge` ms).
   */
  async overrides(now: number | undefined, maxAge = 0): Promise<OverrideEntry[]> {
    const all = await this.store.listing(now, maxAge);
    const out: OverrideEntry[] = [];
    const space = this.space;
    for (const { policy, entry } of all) {
      // the index is the policy's: this namespace's clients, listed by their own key
      if (policy === this.id && entry.key.startsWith(space)) out.push({ ...entry, key: decodeKey(entry.key.slice(space.length)) });
    }
    return out;
  }

  /** shareSummary — writes this process's summary (lua/share.lua), kept `ttl` ms. */
  async shareSummary(instance: string, text: string, ttl: number): Promise<void> {
    const { hash, seen } = this.summaryKeys();
    await this.store.run(shareScript, [hash, seen], [instance, text, String(Math.ceil(ttl))]);
  }

  /** sharedSummaries — every process's latest summary. */
  async sharedSummaries(): Promise<string[]> {
    const reply = await this.store.callBuffer('HVALS', this.summaryKeys().hash);
    return Array.isArray(reply) ? reply.map((b) => String(b)) : [];
  }

  /** summaryKeys — where the processes' summaries of this policy live (one hash slot). */
  private summaryKeys(): { hash: string; seen: string } {
    const base = `${this.store.prefix}{top:${this.id}${this.space === '' ? '' : `:${this.space}`}}`;
    return { hash: `${base}:s`, seen: `${base}:w` };
  }

  // ---- end of observation ----

  /**
   * decision — the Decision from the script's reply (doubles, see the header of policy.lua: the outcome, then per rule
   * admits, remaining, retryAfter, resetAfter and its rate or delay if it measures one), built by the policy's shared code.
   */
  decision(reply: Buffer): Decision {
    const rules = this.policy.rules;
    const measures = this.measures;
    const count = rules.length;
    const outcomes = new Array<RuleOutcome>(count);
    let j = 8;
    for (let i = 0; i < count; i++) {
      const c = rules[i];
      const m = measures[i];
      const extra = m === 0 ? undefined : reply.readDoubleLE(j + 32);
      outcomes[i] = new Outcome(
        c.name, c.algorithm, reply.readDoubleLE(j) === 1, c.limit, reply.readDoubleLE(j + 8), reply.readDoubleLE(j + 16),
        reply.readDoubleLE(j + 24), m === 1 ? extra : undefined, m === 2 ? extra : undefined,
      );
      j += m === 0 ? 32 : 40;
    }
    const kind = reply.readDoubleLE(0);
    if (kind < 2) return this.policy.finish(outcomes, kind === 1);
    const override: Override = { kind: kind === 2 ? 'block' : 'exempt', until: reply.readDoubleLE(j + 8) };
    if (reply.length > j + 24) override.reason = reply.toString('utf8', j + 25);
    return this.policy.overrideDecision(outcomes, override, reply.readDoubleLE(j));
  }

  /** failed — the failure policy's answer for a check Redis did not decide. */
  failed(e: unknown, key: string, cost: number, now: number | undefined): Decision {
    this.store.noteFailure(e);
    if (this.fallbackTable !== undefined) {
      const d = this.fallbackTable.evaluate(key, cost, now ?? this.localNow());
      d.fallback = true;
      return d;
    }
    return this.unavailable();
  }

  /** unavailable — the decision of onError 'deny' or 'allow' (reason 'store-unavailable'). */
  unavailable(): Decision {
    const allowed = this.store.onError === 'allow';
    const rules: RuleOutcome[] = this.policy.rules.map((c) => ({
      name: c.name, algorithm: c.algorithm, allowed, limit: c.limit, remaining: 0,
      retryAfter: allowed ? 0 : UNAVAILABLE_RETRY, resetAfter: 0,
    }));
    return {
      allowed, reason: 'store-unavailable', limit: rules[0].limit, remaining: 0,
      retryAfter: allowed ? 0 : UNAVAILABLE_RETRY, resetAfter: 0, rules,
    };
  }
}

/** MAX_COMPOUNDS — the most compound scripts a store keeps compiled (one per tuple of policies seen). */
const MAX_COMPOUNDS = 256;

/**
 * oneSlot — whether the parts' Redis keys hash to one Cluster slot: their hash tags are the encoded client keys,
 * so the same client key is one slot, and different ones are compared by CRC16 (XMODEM) mod 16384.
 */
function oneSlot(parts: readonly Part[]): boolean {
  const first = (parts[0].bound as RedisBound).space + encodeKey(parts[0].key);
  let slot = -1;
  for (let i = 1; i < parts.length; i++) {
    const k = (parts[i].bound as RedisBound).space + encodeKey(parts[i].key);
    if (k === first) continue;
    if (slot < 0) slot = keySlot(first);
    if (keySlot(k) !== slot) return false;
  }
  return true;
}

/** keySlot — the Cluster slot of a hash tag (its UTF-8 bytes). */
export const keySlot = tagSlot;

// ---- Observation (the operators' view): the index's layout, and the scripts of the listing and the summaries. ----

/** IndexRef — where one client's override is filed: its bucket (listing.ts) and its member there (policy id and encoded key). */
export interface IndexRef extends Bucket {
  member: string;
}

/** Listed — one entry of the index in force: its policy id and the entry (its key as encoded in the Redis key). */
export interface Listed {
  policy: string;
  entry: OverrideEntry;
}

/** nonLocal — a script refused because a bucket it touches is on another node than its key (lua/index.lua). */
function nonLocal(e: unknown): boolean {
  return e instanceof Error && /non local key/i.test(e.message);
}

/** indexed — an override script with the index module (lua/index.lua) before its own code. */
function indexed(name: 'override' | 'unoverride'): Script {
  const base = opScript(name).text;
  const body = lua(name);
  const at = base.lastIndexOf(body);
  return new Script(`${base.slice(0, at)}${lua('index')}\n${base.slice(at)}`);
}
const pruneScript = new Script(lua('prune'));
const bucketScript = new Script(lua('bucket'));
const registerScript = new Script(lua('register'));
const unfileScript = new Script(lua('unfile'));
const refileScript = opScript('refile');
const shareScript = new Script(lua('share'));

/** readEntry — one index entry (lua/index.lua: kind, until, since, reason), or undefined when unreadable. */
function readEntry(member: string, v: Buffer): OverrideEntry | undefined {
  if (!(v instanceof Buffer) || v.length < 17) return undefined;
  const kind = v[0] === 98 ? 'block' : v[0] === 101 ? 'exempt' : undefined;
  if (kind === undefined) return undefined;
  const e: OverrideEntry = { key: member, kind, until: v.readDoubleLE(1), since: v.readDoubleLE(9) };
  if (v.length > 17) e.reason = v.toString('utf8', 17);
  return e;
}


/** decodeKey — the inverse of encodeKey. */
export function decodeKey(encoded: string): string {
  if (!encoded.includes('%')) return encoded;
  return encoded.replace(/%u([0-9a-f]{4})|%25|%7B|%7D/g, (m, u: string | undefined) =>
    (u !== undefined ? String.fromCharCode(parseInt(u, 16)) : m === '%25' ? '%' : m === '%7B' ? '{' : '}'));
}

/** slotTags — for every hash slot, a short tag hashing to it (base-36 counting; made once, on first use, ~170 000 CRCs). */
let tags: string[] | undefined;
export function slotTag(slot: number): string {
  if (tags === undefined) {
    const t = new Array<string>(16384);
    let left = 16384;
    for (let i = 0; left > 0; i++) {
      const tag = `i${i.toString(36)}`;
      const s = tagSlot(tag);
      if (t[s] === undefined) {
        t[s] = tag;
        left--;
      }
    }
    tags = t;
  }
  return tags[slot];
}

/** withTimeout — a call's promise, rejected with a StoreUnavailableError after `ms`. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

// ---- end of observation ----

/** UNAVAILABLE_RETRY — the retryAfter of a fail-closed decision, ms: a hint to come back soon, not a promise. */
export const UNAVAILABLE_RETRY = 1000;

/**
 * redisStore — state in Redis or Redis Cluster: one EVALSHA per check for the whole policy.
 * @example limiter({ rules, store: redisStore({ client: new Redis(), onError: 'memory' }) })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
