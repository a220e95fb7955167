/**
 * options — the Redis store's options (RedisStoreOptions, documented on the type) and their validation: `checkShape`
 * before anything is read, `readSettings` once the client is known (wait needs a standalone ioredis client). Each
 * error names the option and the value, in the order the store has always checked them.
 */
import { RatekeeperError, show } from '../../core/errors.js';
import { checkOptions } from '../../core/options.js';
import type { NodeRedisLike, RedisClient } from './client.js';
import { readLocalFirst, type LocalFirstOptions, type LocalFirstSettings } from './localFirst/options.js';
import { readFleet, type FleetOptions, type FleetSettings } from './fleet.js';

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
   * so a hung server cannot grow a queue without bound. A batch of one key's checks (up to 64, `batch`) is one
   * command: at most 64 × maxPending checks wait on a server. @default 10_000
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
  /** batch — the plain checks of one key waiting in one tick go to Redis as one script call, in order (batch.ts); default true. */
  batch?: boolean;
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
  /**
   * localFirst — decide in-process on a copy of each client's state, synced with Redis in batches, within a stated
   * bound (docs/fleet.md; {@link LocalFirstOptions}). Policies with slidingLog rules or an automatic block stay
   * in the exact mode. Undefined, or `maxUnsynced: 0`: the exact mode. @default undefined
   * @example redisStore({ client, localFirst: { maxUnsynced: 5, flushEvery: '20ms' } })
   */
  localFirst?: LocalFirstOptions;
  /**
   * fleet — how many instances share this Redis, so that onError 'memory' admits this instance's share of each limit
   * while Redis is away (limit and burst divided by N, at least one request's cost: docs/fleet.md): a
   * registry in Redis (`<prefix>{fleet}`, a heartbeat every `interval` ms, an instance counted until `expiry` ms after
   * its last one; the store's `fleetSize` is the latest count), a fixed `{ instances }`, or `false` (every instance's
   * fallback admits the whole limit). @default { expiry: 15_000, interval: 5_000 } with onError 'memory', else false
   * @example redisStore({ client, onError: 'memory', fleet: { expiry: 15_000 } })
   */
  fleet?: FleetOptions;
}

const REDIS_STORE_OPTIONS: ReadonlySet<string> = new Set(['client', 'prefix', 'timeout', 'onError', 'maxPending', 'fallbackMaxKeys', 'coalesce', 'batch', 'wait', 'localFirst', 'fleet']);

/** Settings — the options read and checked, defaults filled in (the client aside: wire.ts). */
export interface Settings {
  prefix: string;
  timeout: number;
  onError: OnError;
  maxPending: number;
  fallbackMaxKeys: number;
  coalesce: boolean;
  batch: boolean;
  /** wait — the replicas and timeout (ms) of WAIT, and the client's `call` that sends it (wait.ts). */
  wait: { replicas: number; timeout: number; call: (...a: (string | number)[]) => Promise<unknown> } | undefined;
  /** localFirst — the local-first mode's settings (localFirst/options.ts); undefined: the exact mode. */
  localFirst: LocalFirstSettings | undefined;
  /** fleet — the registry's expiry and interval (ms), a fixed N, or undefined: none (fleet.ts). */
  fleet: FleetSettings;
}

/** checkShape — `options` is an object of known options only (before the client is looked at). */
export function checkShape(options: RedisStoreOptions): void {
  if (typeof options !== 'object' || options === null) throw new RatekeeperError(`redisStore takes an options object like { client }, got ${show(options)}`);
  checkOptions(options, REDIS_STORE_OPTIONS, 'redisStore');
}

/** readSettings — every option but the client, checked and with its default; `c` — the client, already checked. */
export function readSettings(options: RedisStoreOptions, c: RedisClient): Settings {
  const prefix = options.prefix ?? 'rk:';
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new RatekeeperError(`redisStore.prefix must be a string without { or } (the client's part of the key is the hash tag), got ${show(prefix)}`);
  }
  const timeout = options.timeout ?? 1000;
  if (typeof timeout !== 'number' || !(timeout > 0) || timeout > 2 ** 31 - 1) {
    throw new RatekeeperError(`redisStore.timeout must be a number of ms > 0, got ${show(options.timeout)}`);
  }
  const onError = options.onError ?? 'deny';
  if (onError !== 'deny' && onError !== 'allow' && onError !== 'memory') {
    throw new RatekeeperError(`redisStore.onError must be 'deny', 'allow' or 'memory', got ${show(options.onError)}`);
  }
  const maxPending = options.maxPending ?? 10_000;
  if (!Number.isSafeInteger(maxPending) || maxPending < 1) throw new RatekeeperError(`redisStore.maxPending must be an integer >= 1, got ${show(maxPending)}`);
  const fallbackMaxKeys = options.fallbackMaxKeys ?? 100_000;
  if (!Number.isSafeInteger(fallbackMaxKeys) || fallbackMaxKeys < 1) throw new RatekeeperError(`redisStore.fallbackMaxKeys must be an integer >= 1, got ${show(options.fallbackMaxKeys)}`);
  if (options.coalesce !== undefined && typeof options.coalesce !== 'boolean') throw new RatekeeperError(`redisStore.coalesce must be a boolean, got ${show(options.coalesce)}`);
  const coalesce = options.coalesce ?? true;
  if (options.batch !== undefined && typeof options.batch !== 'boolean') throw new RatekeeperError(`redisStore.batch must be a boolean, got ${show(options.batch)}`);
  const batch = options.batch ?? true;
  let wait: Settings['wait'];
  if (options.wait !== undefined) {
    const w = options.wait;
    if (typeof w !== 'object' || w === null || !Number.isSafeInteger(w.replicas) || w.replicas < 1 || !Number.isSafeInteger(w.timeout) || w.timeout < 1) {
      throw new RatekeeperError(`redisStore.wait must be { replicas: integer >= 1, timeout: integer ms >= 1 }, got ${show(w)}`);
    }
    if (2 * w.timeout >= timeout) throw new RatekeeperError(`redisStore.wait.timeout must be under half the store's timeout (${timeout} ms): a call may wait two WAITs, got ${w.timeout}`);
    if ((c as { isCluster?: boolean }).isCluster === true) throw new RatekeeperError('redisStore.wait needs a standalone or Sentinel client: a Cluster would send WAIT to another node than the write');
    const call = (c as { call?: (...a: (string | number)[]) => Promise<unknown> }).call;
    if (typeof call !== 'function') throw new RatekeeperError('redisStore.wait needs an ioredis client (its call method sends WAIT on the write\'s connection)');
    wait = { replicas: w.replicas, timeout: w.timeout, call: (...a) => call.call(c, ...a) };
  }
  const localFirst = readLocalFirst(options.localFirst);
  return { prefix, timeout, onError, maxPending, fallbackMaxKeys, coalesce, batch, wait, localFirst, fleet: readFleet(options.fleet, onError === 'memory') };
}
