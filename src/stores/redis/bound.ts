/**
 * bound — RedisBound, one policy's view of the Redis store: its Redis keys, its check (a CheckCall on the store's call
 * mechanism, decided by the policy's script and read by reply.ts), its refunds, overrides and automatic blocks, its
 * part of the operators' view (the index, the shared summaries), and the failure policy of its checks (fallback.ts).
 * Knows the store only through BoundHost, which RedisStore implements (store.ts imports this file, not the reverse).
 */
import type { Decision, Override } from '../../core/types.js';
import type { Policy } from '../../core/policy.js';
import type { MemoryTable } from '../memory.js';
import type { BoundStore, OverrideEntry, OverrideRequest } from '../types.js';
import { type Script, policyId, policyScript, refundScript } from './scripts.js';
import { type Scanner } from './retime.js';
import { encodeKey } from './keys.js';
import { Call, StoreUnavailableError, learnOffset, type Budget, type Calls, type ScriptText } from './call.js';
import type { RedisClient } from './client.js';
import type { BatchSend, CheckSend } from './wire.js';
import type { OnError } from './options.js';
import { ReplyReader } from './reply.js';
import { Fallback, unavailable, type FleetShare } from './fallback.js';
import type { IndexRef, OverrideIndex } from './overrides.js';
import { batchScript } from './compose/batch.js';
import { shareSummary, sharedSummaries, summaryKeys } from './summaries.js';

/**
 * BatchSink — where a plain check of a hot key waits for the end of its tick (batch.ts's Batcher): `add` queues it,
 * `flush` sends every queued batch now (before a call whose order matters: a refund, a compound check, an override).
 */
export interface BatchSink {
  add(bound: RedisBound, redisKey: string, budget: Budget, key: string, cost: number, now: number | undefined, resolve: (d: Decision) => void): void;
  flush(): void;
}

/** BoundHost — what a bound policy uses of its store (RedisStore). */
export interface BoundHost {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly onError: OnError;
  readonly calls: Calls;
  readonly index: OverrideIndex;
  readonly fallbackShare: FleetShare | undefined;
  readonly fallbackMaxKeys: number;
  /** failing — whether the latest check was answered by the failure policy: a check's reply clears it. */
  failing: boolean;
  readonly isCluster: boolean;
  readonly checkBuffer: CheckSend;
  readonly batchBuffer: BatchSend;
  cork(): void;
  /** batcher — the hot keys' batches of this tick (batch.ts), undefined when `batch: false`. */
  readonly batcher: BatchSink | undefined;
  noteFailure(e: unknown): void;
  run(script: ScriptText, keys: string[], args: (string | number)[], binary?: boolean, deadline?: boolean): Promise<unknown>;
  callBuffer(command: string, ...args: string[]): Promise<unknown>;
  reset(key: string): Promise<unknown>;
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
  /** fallback — onError 'memory': the policy's fallback (its table in the store's memory store, scaled to the fleet, and the overrides it holds). */
  readonly fallback: Fallback | undefined;
  /** reply — the reader of this policy's replies (reply.ts). */
  readonly reply: ReplyReader;
  private refunder: Script | undefined;
  private batcher: Script | undefined;
  /** batch — the script of a batch of this policy's checks on one key (batch.ts), compiled at the first batch. */
  get batch(): Script {
    return (this.batcher ??= batchScript(this.policy));
  }
  /**
   * keyHead, keyTail — what surrounds the encoded client key in its Redis key: `<prefix>{<encoded namespace>` and
   * `}:<policy id>`. encodeKey escapes character by character, so head + encodeKey(key) is what encodeKey(namespace +
   * key) was before the namespace moved out of the key: Redis keys are byte-identical to a full key's.
   */
  private readonly keyHead: string;
  /** space — the encoded namespace (the limiter's, '' for none): the head of every hash tag and index member of this bound. */
  readonly space: string;
  private readonly keyTail: string;

  constructor(readonly store: BoundHost, readonly policy: Policy, namespace = '') {
    this.id = policyId(policy);
    this.script = policyScript(policy);
    // the check script's SHA names the rules themselves (policies of one id with other limits share the key id, not a script)
    this.tupleId = policy.dryRun ? `${this.script.sha}~dry` : this.script.sha;
    this.fallback = store.fallbackShare === undefined ? undefined : new Fallback(store.fallbackShare, policy, store.fallbackMaxKeys);
    this.space = encodeKey(namespace);
    this.keyHead = `${store.prefix}{${this.space}`;
    this.keyTail = `}:${this.id}`;
    this.reply = new ReplyReader(policy);
  }

  /** fallbackTable — the policy's table in the 'memory' fallback store. */
  get fallbackTable(): MemoryTable | undefined {
    return this.fallback?.table;
  }

  /** memoKey, memoRedisKey — the previous client's key and its Redis key (a hot key's next check reuses it). */
  private memoKey: string | undefined;
  private memoRedisKey = '';

  /** redisKey — the client's key in Redis. */
  redisKey(key: string): string {
    if (key === this.memoKey) return this.memoRedisKey;
    this.memoKey = key;
    return (this.memoRedisKey = this.keyHead + encodeKey(key) + this.keyTail);
  }

  evaluate(key: string, cost: number, now: number | undefined): Promise<Decision> {
    const store = this.store;
    const calls = store.calls;
    const redisKey = this.redisKey(key);
    const budget = calls.budgetOf(redisKey);
    const refused = calls.refuse(budget);
    if (refused !== undefined) return Promise.resolve(this.failed(refused, key, cost, now));
    const batcher = store.batcher;
    if (batcher !== undefined) return new Promise<Decision>((resolve) => batcher.add(this, redisKey, budget, key, cost, now, resolve));
    return new Promise<Decision>((resolve) => {
      // corked before it is sent: the checks of one tick share one write (coalesce)
      store.cork();
      calls.start(new CheckCall(this, redisKey, key, cost, now, performance.now() + calls.timeout, budget, resolve));
    });
  }

  /**
   * decision — the Decision from the script's reply (reply.ts: the outcome, then per rule admits, remaining,
   * retryAfter, resetAfter and its rate or delay if it measures one), built by the policy's shared code.
   */
  decision(reply: Buffer): Decision {
    return this.reply.decision(reply);
  }

  /** wallOf — the server's clock in a reply (ms; −1 when the script did not read it). */
  wallOf(reply: Buffer): number {
    return this.reply.wallOf(reply);
  }

  /** failed — the failure policy's answer for a check Redis did not decide. */
  failed(e: unknown, key: string, cost: number, now: number | undefined): Decision {
    this.store.noteFailure(e);
    return this.fallback !== undefined ? this.fallback.decide(key, cost, now) : this.unavailable();
  }

  /** unavailable — the decision of onError 'deny' or 'allow' (reason 'store-unavailable'). */
  unavailable(): Decision {
    return unavailable(this.policy, this.store.onError === 'allow');
  }

  /** localNow — the fallback's clock, never stepping back (onError 'memory'). */
  localNow(): number {
    return this.fallback!.localNow();
  }

  /**
   * autoBlock — starts the policy's automatic block of `key` after decision `d`, which its rules refused at the
   * check's time (the explicit `now`, else the server's clock the script read, in `reply`), so that the block ends
   * exactly where `d.retryAfter` says (Policy.autoBlocked). A second script call, on the client's master: it sets
   * the block only when none is in force (two refusals in one round trip keep the first's end). When it fails, `d`
   * keeps the rules' own retryAfter. Resolves to `d`.
   */
  autoBlock(key: string, now: number | undefined, reply: Buffer, d: Decision): Promise<Decision> {
    const at = now ?? this.reply.wallOf(reply);
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
    this.store.batcher?.flush();
    await this.store.index.file(this.redisKey(key), this.id, this.space + encodeKey(key), request, now);
    this.fallback?.remember(key, now, request.kind, request.for, request.reason);
  }

  async clearOverride(key: string, kind: Override['kind']): Promise<void> {
    this.store.batcher?.flush();
    await this.store.index.unfile(this.redisKey(key), this.id, this.space + encodeKey(key), kind);
    this.fallback?.cleared(key, kind);
  }

  reset(key: string): Promise<void> {
    this.store.batcher?.flush();
    return this.store.reset(this.redisKey(key)).then(() => undefined);
  }

  /** refund — one round trip of the policy's refund script (lua/policy.lua, `refund`); rejects when Redis does not answer. */
  refund(key: string, cost: number, now: number | undefined, leakyOnly: boolean): Promise<Decision> {
    this.store.batcher?.flush();
    this.refunder ??= refundScript(this.policy);
    const args = [now === undefined ? '' : String(now), String(cost), leakyOnly ? '1' : '0'];
    return this.store.run(this.refunder, [this.redisKey(key)], args, true).then((reply) => this.reply.decision(reply as Buffer));
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

  // ---- the operators' view: the index of blocks and exemptions (overrides.ts), the shared summaries (summaries.ts) ----

  /** indexOf — the bucket `key`'s override is filed in and its member there (OverrideIndex.refOf). */
  indexOf(key: string, own = false): IndexRef {
    return this.store.index.refOf(this.id, this.space + encodeKey(key), own);
  }

  /** override — `key`'s block or exemption in force at `now` (undefined: the server's clock), from the index. */
  override(key: string, now: number | undefined): Promise<OverrideEntry | undefined> {
    return this.store.index.entryOf(this.id, this.space + encodeKey(key), key, now);
  }

  /**
   * overrides — every block and exemption of this policy in force at `now` (undefined: the server's clock), from the
   * store's listing of the index (listing.ts: one bucket read per master, shared by every limiter of the store and
   * reused for `maxAge` ms).
   */
  overrides(now: number | undefined, maxAge = 0): Promise<OverrideEntry[]> {
    return this.store.index.entriesOf(this.id, this.space, now, maxAge);
  }

  /** shareSummary — writes this process's summary (lua/share.lua), kept `ttl` ms. */
  shareSummary(instance: string, text: string, ttl: number): Promise<void> {
    return shareSummary(this.store, summaryKeys(this.store.prefix, this.id, this.space), instance, text, ttl);
  }

  /** sharedSummaries — every process's latest summary. */
  sharedSummaries(): Promise<string[]> {
    return sharedSummaries(this.store, summaryKeys(this.store.prefix, this.id, this.space));
  }
}

/**
 * answerCheck — a check's reply (bytes[at, end): one check's) to its Decision: read by the policy's reader, learnt by
 * the 'memory' fallback, an automatic block started when its rules refused; an unreadable reply is a store failure.
 */
export function answerCheck(
  b: RedisBound, key: string, cost: number, now: number | undefined, bytes: Buffer, at: number, end: number, resolve: (d: Decision) => void,
): void {
  let d: Decision;
  b.store.failing = false;
  const fallback = b.fallback;
  try {
    d = b.reply.decision(bytes, at, end);
    if (fallback !== undefined) fallback.learn(key, now, own(bytes, at, end), b.reply);
  } catch (e) {
    resolve(b.failed(new StoreUnavailableError(`unreadable reply: ${e instanceof Error ? e.message : String(e)}`, e), key, cost, now));
    return;
  }
  const policy = b.policy;
  if (policy.blockFor > 0 && policy.autoBlocks(d, cost) && bytes.readDoubleLE(at) === 0) {
    b.autoBlock(key, now, own(bytes, at, end), d).then(resolve);
    return;
  }
  resolve(d);
}

/** own — one check's reply, bytes[at, end), as a Buffer of its own view (the whole reply when it is all of it). */
function own(bytes: Buffer, at: number, end: number): Buffer {
  return at === 0 && end === bytes.length ? bytes : bytes.subarray(at, end);
}

/**
 * CheckCall — one check in flight on the store's call mechanism: settles once, with the script's decision (and the
 * policy's automatic block when its rules refused), or the failure policy's when Redis errs or the deadline passes.
 * Every reply, even a late one, teaches its server's clock offset (deadlines).
 */
export class CheckCall extends Call {
  constructor(
    readonly bound: RedisBound, readonly redisKey: string, readonly key: string, readonly cost: number,
    readonly now: number | undefined, at: number, budget: Budget, private readonly resolve: (d: Decision) => void,
  ) {
    super(budget, at, cost !== 0); // a look (cost 0) writes nothing: no WAIT
  }

  send(text: boolean): Promise<unknown> {
    const b = this.bound;
    const store = b.store;
    const now = this.now;
    const cost = this.cost;
    return store.checkBuffer(text, b.script, this.redisKey, now === undefined ? undefined : String(now), cost === 1 ? '1' : String(cost), store.calls.deadline(this));
  }

  override seen(reply: unknown): void {
    learnOffset(this.budget, this.bound.reply.wallOf(reply as Buffer), performance.now());
  }

  answer(v: unknown): void {
    const reply = v as Buffer;
    answerCheck(this.bound, this.key, this.cost, this.now, reply, 0, reply.length, this.resolve);
  }

  fail(e: Error): void {
    this.resolve(this.bound.failed(e, this.key, this.cost, this.now));
  }
}
