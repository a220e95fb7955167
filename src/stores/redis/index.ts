import type { Decision, Override, RuleOutcome } from '../../core/types.js';
import type { Policy } from '../../core/policy.js';
import { RatekeeperError, show } from '../../core/errors.js';
import { MemoryStore, type MemoryTable } from '../memory.js';
import type { BoundStore, OverrideRequest, Store } from '../types.js';
import { Script, opScript, policyId, policyScript } from './scripts.js';

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

/** OnError — what a check answers when Redis does not: refuse, admit, or decide on a local memory store. */
export type OnError = 'deny' | 'allow' | 'memory';

/** RedisStoreOptions — the Redis store's client, key layout and failure policy. */
export interface RedisStoreOptions {
  /**
   * client — an ioredis `Redis` or `Cluster`, connected by the caller (the store never closes it). Give it an
   * `error` listener, and consider `maxRetriesPerRequest: 1` so that commands caught by a disconnection fail fast.
   * @example new Redis({ host: '127.0.0.1', port: 6379 })
   */
  client: RedisClient;
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
   * maxPending — the most commands sent and not yet answered; past it a check answers by `onError` at once, so a
   * hung server cannot grow a queue without bound. @default 10_000
   */
  maxPending?: number;
  /** fallbackMaxKeys — `maxKeys` of the `'memory'` fallback store. @default 100_000 */
  fallbackMaxKeys?: number;
}

/** StoreUnavailableError — why a Redis call was given up: an error, a timeout, a disconnected client, too many pending. */
export class StoreUnavailableError extends Error {
  constructor(message: string, cause?: unknown) {
    super(`ratekeeper/redis: ${message}`, cause === undefined ? undefined : { cause });
    this.name = 'StoreUnavailableError';
  }
}

/** DOWN — client states in which a command would only wait in the client's offline queue. */
const DOWN = new Set(['reconnecting', 'close', 'end', 'disconnecting']);

/** Deadline — one call waiting for its answer or its timeout, whichever comes first. */
interface Deadline {
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
  /** pending — commands sent and not yet settled by the client (<= maxPending). */
  pending = 0;
  /** failures — calls answered by the failure policy since the store was made. */
  failures = 0;
  /** lastError — the latest reason a call was answered by the failure policy. */
  lastError: Error | undefined;
  /** fallback — the local store of onError 'memory'. */
  readonly fallback: MemoryStore | undefined;
  /** deadlines — calls in flight in the order sent, so in deadline order (one timeout per store); done ones are popped lazily. */
  private readonly deadlines: Deadline[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly overrideSet = opScript('override');
  private readonly overrideClear = opScript('unoverride');
  private readonly resetState = opScript('reset');

  constructor(options: RedisStoreOptions) {
    if (typeof options !== 'object' || options === null) throw new RatekeeperError(`redisStore takes an options object like { client }, got ${show(options)}`);
    const c = options.client as unknown as RedisClient | undefined;
    if (typeof c !== 'object' || c === null || typeof c.evalsha !== 'function' || typeof c.eval !== 'function' || typeof c.callBuffer !== 'function') {
      throw new RatekeeperError(`redisStore.client must be an ioredis Redis or Cluster, got ${show(options.client)}`);
    }
    this.client = c;
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
    if (onError === 'memory') this.fallback = new MemoryStore({ maxKeys: options.fallbackMaxKeys ?? 100_000 });
  }

  attach(policy: Policy): RedisBound {
    return new RedisBound(this, policy);
  }

  /** close — stops the timeout timer and forgets the fallback's state; the client is the caller's to close. */
  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.fallback?.close();
  }

  /**
   * run — a script by SHA (EVAL when the server answers NOSCRIPT, which also caches it there), within the store's
   * timeout and pending bound. Rejects with a StoreUnavailableError; never leaves a rejection unhandled.
   */
  run(script: Script, keys: string[], args: (string | number)[], binary = false): Promise<unknown> {
    const status = this.client.status;
    if (status !== undefined && DOWN.has(status)) return Promise.reject(new StoreUnavailableError(`the client is ${status}`));
    if (this.pending >= this.maxPending) return Promise.reject(new StoreUnavailableError(`${this.pending} commands are pending (maxPending)`));
    return new Promise((resolve, reject) => {
      const d: Deadline = { at: performance.now() + this.timeout, done: false, fail: reject };
      this.track(d);
      this.pending++;
      const settle = (): void => {
        this.pending--;
      };
      const c = this.client;
      (binary ? c.callBuffer('EVALSHA', script.sha, keys.length, ...keys, ...args) : c.evalsha(script.sha, keys.length, ...keys, ...args))
        .catch((e: unknown) => {
          if (!(e instanceof Error) || !e.message.startsWith('NOSCRIPT')) throw e;
          return binary ? c.callBuffer('EVAL', script.text, keys.length, ...keys, ...args) : c.eval(script.text, keys.length, ...keys, ...args);
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

  setOverride(key: string, request: OverrideRequest, now: number | undefined): Promise<unknown> {
    const args: string[] = [now === undefined ? '' : String(now), request.kind === 'block' ? 'b' : 'e', request.for === Infinity ? 'inf' : String(request.for)];
    if (request.reason !== undefined) args.push(request.reason);
    return this.run(this.overrideSet, [key], args);
  }

  clearOverride(key: string, kind: Override['kind']): Promise<unknown> {
    return this.run(this.overrideClear, [key], [kind === 'block' ? 'b' : 'e']);
  }

  reset(key: string): Promise<unknown> {
    return this.run(this.resetState, [key], []);
  }

  /** fail — counts a failure and remembers why. */
  noteFailure(e: unknown): void {
    this.failures++;
    this.lastError = e instanceof Error ? e : new Error(String(e));
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
  private readonly script: Script;
  private readonly fallback: MemoryTable | undefined;
  /** lastLocal — the fallback's clock, never stepping back. */
  private lastLocal = -Infinity;

  constructor(readonly store: RedisStore, readonly policy: Policy) {
    this.id = policyId(policy);
    this.script = policyScript(policy);
    this.fallback = store.fallback?.attach(policy);
  }

  /** redisKey — the client's key in Redis. */
  redisKey(key: string): string {
    return `${this.store.prefix}{${encodeKey(key)}}:${this.id}`;
  }

  evaluate(key: string, cost: number, now: number | undefined): Promise<Decision> {
    return this.store.run(this.script, [this.redisKey(key)], [now === undefined ? '' : String(now), String(cost)], true).then(
      (reply) => this.decision(reply as Buffer),
      (e: unknown) => this.failed(e, key, cost, now),
    );
  }

  setOverride(key: string, request: OverrideRequest, now: number | undefined): Promise<void> {
    return this.store.setOverride(this.redisKey(key), request, now).then(() => undefined);
  }

  clearOverride(key: string, kind: Override['kind']): Promise<void> {
    return this.store.clearOverride(this.redisKey(key), kind).then(() => undefined);
  }

  reset(key: string): Promise<void> {
    return this.store.reset(this.redisKey(key)).then(() => undefined);
  }

  /** decision — the Decision from the script's reply (doubles, see the header of policy.lua), built by the policy's shared code. */
  decision(reply: Buffer): Decision {
    const rules = this.policy.rules;
    const outcomes = new Array<RuleOutcome>(rules.length);
    for (let i = 0, j = 24; i < rules.length; i++, j += 48) {
      const c = rules[i];
      const o: RuleOutcome = {
        name: c.name, algorithm: c.algorithm, allowed: reply.readDoubleLE(j) === 1, limit: c.limit, remaining: reply.readDoubleLE(j + 8),
        retryAfter: reply.readDoubleLE(j + 16), resetAfter: reply.readDoubleLE(j + 24),
      };
      const rate = reply.readDoubleLE(j + 32);
      const delay = reply.readDoubleLE(j + 40);
      if (rate === rate) o.rate = rate;
      if (delay === delay) o.delay = delay;
      outcomes[i] = o;
    }
    const kind = reply.readDoubleLE(0);
    if (kind < 2) return this.policy.finish(outcomes, kind === 1);
    const override: Override = { kind: kind === 2 ? 'block' : 'exempt', until: reply.readDoubleLE(16) };
    const end = 24 + 48 * rules.length;
    if (reply.length > end) override.reason = reply.toString('utf8', end);
    return this.policy.overrideDecision(outcomes, override, reply.readDoubleLE(8));
  }

  /** failed — the failure policy's answer for a check Redis did not decide. */
  private failed(e: unknown, key: string, cost: number, now: number | undefined): Decision {
    this.store.noteFailure(e);
    if (this.fallback !== undefined) {
      let t = now;
      if (t === undefined) {
        const local = Date.now();
        if (local > this.lastLocal) this.lastLocal = local;
        t = this.lastLocal;
      }
      const d = this.fallback.evaluate(key, cost, t);
      d.fallback = true;
      return d;
    }
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

/** UNAVAILABLE_RETRY — the retryAfter of a fail-closed decision, ms: a hint to come back soon, not a promise. */
export const UNAVAILABLE_RETRY = 1000;

/**
 * redisStore — state in Redis or Redis Cluster: one EVALSHA per check for the whole policy.
 * @example limiter({ rules, store: redisStore({ client: new Redis(), onError: 'memory' }) })
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  return new RedisStore(options);
}
