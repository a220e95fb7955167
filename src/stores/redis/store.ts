/**
 * store — RedisStore: state in Redis (standalone or Cluster), one EVALSHA per check for the whole policy. Holds what
 * a store's policies share: the client and how it is written to (wire.ts), the calls in flight (call.ts), the WAIT of
 * `wait` (wait.ts), the 'memory' fallback store and the fleet it shares the limits with (fleet.ts), the index of
 * overrides (overrides.ts), the compound scripts of checkAll, the health probe. Binds policies as RedisBound (bound.ts), which sees it through BoundHost.
 */
import type { Decision, Override } from '../../core/types.js';
import type { Policy } from '../../core/policy.js';
import { localClock } from '../../core/clock.js';
import { MemoryStore } from '../memory.js';
import type { OverrideRequest, Part, Store } from '../types.js';
import { type Script, compoundScript, opScript } from './scripts.js';
import { HealthProbe, type StoreHealth } from './health.js';
import type { Placement } from './listing.js';
import { lengthens, retime } from './retime.js';
import { encodeKey, keySlot } from './keys.js';
import type { RedisClient } from './client.js';
import { Corker, checkSenders, clientOf, isClusterClient, masterOf, type BatchSend, type CheckSend } from './wire.js';
import { checkShape, readSettings, type OnError, type RedisStoreOptions } from './options.js';
import { Calls, StoreUnavailableError, type Budget, type ScriptText } from './call.js';
import { waiter, type Waiter } from './wait.js';
import { OverrideIndex, type IndexRef, type Listed } from './overrides.js';
import { RedisBound, type BoundHost } from './bound.js';
import { LocalBound } from './localFirst/bound.js';
import { LocalHub, type LocalFirstStats } from './localFirst/stats.js';
import type { LocalFirstSettings } from './localFirst/options.js';
import { Batcher } from './batch.js';
import { FleetShare } from './fallback.js';
import { Fleet, fleetKey } from './fleet.js';

/**
 * RedisStore — state in Redis (standalone or Cluster), one EVALSHA per check for the whole policy, decided by the
 * Lua twin of core/policy.ts. Keys of one client share a hash slot, so the script never gets CROSSSLOT.
 */
export class RedisStore implements Store, BoundHost {
  readonly client: RedisClient;
  readonly prefix: string;
  readonly timeout: number;
  readonly onError: OnError;
  readonly maxPending: number;
  /** calls — the calls in flight (call.ts): pending counts, deadlines, the one timer. */
  readonly calls: Calls;
  /** failures — calls answered by the failure policy since the store was made. */
  failures = 0;
  /** lastError — the latest reason a call was answered by the failure policy. */
  lastError: Error | undefined;
  /** fallback — the local store of onError 'memory'; fallbackMaxKeys — its maxKeys (and the most overrides it remembers per policy). */
  readonly fallback: MemoryStore | undefined;
  readonly fallbackMaxKeys: number;
  /** fallbackShare — the fallback's tables, each under its policy scaled to the fleet's size (fallback.ts). */
  readonly fallbackShare: FleetShare | undefined;
  /** fleet — this instance in the fleet registry, or its fixed size (fleet.ts); undefined: `fleet: false`, or onError not 'memory'. */
  readonly fleet: Fleet | undefined;
  /** failing — whether the latest check was answered by the failure policy (set by noteFailure, cleared by a check's reply). */
  failing = false;
  /** failingSince — when `failing` last turned true (ms since the epoch): the fallback's start, for the operators' view. */
  failingSince = 0;
  readonly coalesce: boolean;
  /** batcher — the plain checks of one key in one tick, sent as one script call (batch.ts; option `batch`, on by default). */
  readonly batcher: Batcher | undefined;
  /** checkBuffer — sends a check's command (one key; now, cost, deadline), the reply kept as bytes (wire.ts). */
  readonly checkBuffer: CheckSend;
  /** batchBuffer — sends a batch's command (batch.ts) by the same road, the reply kept as bytes. */
  readonly batchBuffer: BatchSend;
  /** waitFor — with `wait`: a write's promise joined with the WAIT sent right behind it (undefined: no WAIT). */
  readonly waitFor: ((p: Promise<unknown>) => Promise<unknown>) | undefined;
  /** index — the index of blocks and exemptions, and its listing (overrides.ts). */
  readonly index: OverrideIndex;
  private readonly corker: Corker;
  private readonly waiter: Waiter | undefined;
  private readonly nodeOf: ((slot: number) => string | undefined) | undefined;

  constructor(options: RedisStoreOptions) {
    checkShape(options);
    const c = clientOf(options.client);
    const s = readSettings(options, c);
    this.client = c;
    this.nodeOf = masterOf(c);
    ({ checkBuffer: this.checkBuffer, batchBuffer: this.batchBuffer } = checkSenders(c));
    this.prefix = s.prefix;
    this.timeout = s.timeout;
    this.onError = s.onError;
    this.maxPending = s.maxPending;
    this.fallbackMaxKeys = s.fallbackMaxKeys;
    if (s.onError === 'memory') this.fallback = new MemoryStore({ maxKeys: s.fallbackMaxKeys });
    if (this.fallback !== undefined) this.fallbackShare = new FleetShare(this.fallback, () => this.fleetSize);
    this.coalesce = s.coalesce;
    this.corker = new Corker(c, s.coalesce);
    this.waiter = s.wait === undefined ? undefined : waiter(s.wait);
    this.waitFor = this.waiter?.waitFor;
    this.calls = new Calls(c, s.timeout, s.maxPending, this.nodeOf, this.waitFor);
    this.index = new OverrideIndex(this.calls, c, s.prefix, this.nodeOf);
    if (s.fleet !== undefined) this.fleet = new Fleet(this, fleetKey(s.prefix), s.fleet);
    this.batcher = s.batch ? new Batcher(this.calls, () => this.cork()) : undefined;
    this.localFirst = s.localFirst;
    if (s.localFirst !== undefined) this.localHub = new LocalHub();
  }

  /** fleetSize — N: the instances sharing this Redis at the latest heartbeat that answered (>= 1; 1 without a fleet). */
  get fleetSize(): number {
    return this.fleet?.size ?? 1;
  }

  /** fallbackActive — onError 'memory' and the latest check was decided on the local fallback (Redis did not answer it). */
  get fallbackActive(): boolean {
    return this.fallback !== undefined && this.failing;
  }


  /** localFirst — the local-first mode's settings (undefined: the exact mode); localHub — its shared part (stats.ts). */
  readonly localFirst: LocalFirstSettings | undefined;
  private readonly localHub: LocalHub | undefined;
  /**
   * locals — the bound policies decided locally, by policy and namespace (flushed and stopped by close): one per pair, so
   * that a limiter re-bound to its own policy (Limiter.succeed binds `to` again) shares its copies rather than adding a
   * second set of them; retiring — the ones detach() released, until their unsynced charges are answered.
   */
  private readonly locals = new Map<Policy, Map<string, LocalBound>>();
  private readonly retiring = new Set<LocalBound>();

  /** localBounds — every LocalBound this store holds (in use or retiring). */
  private localBounds(): LocalBound[] {
    const all = [...this.retiring];
    for (const m of this.locals.values()) all.push(...m.values());
    return all;
  }

  /** liveLocalBounds — the local-first bounds this store holds, retiring ones included (the operators' and the tests' view of reloads). */
  get liveLocalBounds(): number {
    return this.localBounds().length;
  }

  /**
   * localFirstStats — the local-first mode's counters (unsynced units, debt, syncs and their latency: stats.ts), a
   * snapshot; undefined in the exact mode.
   */
  localFirstStats(): LocalFirstStats | undefined {
    const h = this.localHub;
    return h === undefined ? undefined : structuredClone(h.stats);
  }

  /** flush — sends every unsynced charge of the local-first mode now; resolves once Redis has answered or failed them. */
  async flush(): Promise<void> {
    await Promise.all(this.localBounds().map((b) => b.flush()));
  }

  /** pending — commands sent and not yet settled by the client, over all servers (each server's budget <= maxPending). */
  get pending(): number {
    return this.calls.pending;
  }

  /** waitShortfalls — WAITs that answered fewer replicas than asked (timed out): charges a failover may lose. */
  get waitShortfalls(): number {
    return this.waiter?.shortfalls ?? 0;
  }

  /** cork — at the first check of a tick, corks the client's sockets until the tick ends (coalesce; wire.ts). */
  cork(): void {
    this.corker.cork();
  }

  attach(policy: Policy, namespace = ''): RedisBound {
    const lf = this.localFirst;
    if (lf !== undefined) {
      let m = this.locals.get(policy);
      if (m === undefined) this.locals.set(policy, (m = new Map()));
      let b = m.get(namespace);
      if (b === undefined) m.set(namespace, (b = new LocalBound(this, policy, namespace, lf, this.localHub as LocalHub)));
      return b;
    }
    return new RedisBound(this, policy, namespace);
  }

  /**
   * detach — `policy` is no longer used by any limiter (the service retires a replaced or dropped limit): its
   * local-first copies are released once their unsynced charges are answered (a late check on it is decided by the
   * exact mode), and the 'memory' fallback forgets its table.
   */
  detach(policy: Policy): void {
    this.fallbackShare?.detach(policy);
    const m = this.locals.get(policy);
    if (m === undefined) return;
    this.locals.delete(policy);
    for (const b of m.values()) {
      this.retiring.add(b);
      void b.retire().finally(() => this.retiring.delete(b));
    }
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
    this.fallbackShare?.succeed(from, to, localClock());
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
      // a part decided locally: checkAll decides each part and refunds (its copy must see its own charges)
      if (b instanceof LocalBound) return undefined;
      bounds[i] = b;
      keys[i] = b.redisKey(parts[i].key);
      args[i + 1] = String(parts[i].cost);
    }
    if (n > 1) {
      if (new Set(keys).size < n) return undefined;
      if ((this.client as { isCluster?: boolean }).isCluster === true && !oneSlot(parts)) return undefined;
    }
    const script = this.compound(bounds);
    this.batcher?.flush();
    this.cork();
    return this.calls.run(script, keys, args, true).then(
      (reply) => {
        this.failing = false;
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
      const local = parts.map((p): Part => ({ bound: (p.bound as RedisBound).fallback!.table, key: p.key, cost: p.cost }));
      const decisions = fallback.evaluateAll(local, now ?? (parts[0].bound as RedisBound).localNow());
      for (const d of decisions) d.fallback = true;
      return decisions;
    }
    return parts.map((p) => (p.bound as RedisBound).unavailable());
  }

  /**
   * close — stops the timeout timer and the fleet's heartbeat, unregisters from the fleet (best effort, not awaited),
   * and forgets the fallback's state; the client is the caller's to close. In local-first mode, sends the unsynced charges first and resolves once Redis has answered them (or failed).
   */
  close(): void | Promise<void> {
    void this.fleet?.close();
    if (this.locals.size === 0 && this.retiring.size === 0) {
      this.calls.close();
      this.fallback?.close();
      return;
    }
    return this.flush().finally(() => {
      for (const b of this.localBounds()) b.close();
      this.calls.close();
      this.fallback?.close();
    });
  }

  /** run — a script call within the store's timeout and pending bound (call.ts Calls.run). */
  run(script: ScriptText, keys: string[], args: (string | number)[], binary = false, deadline = false): Promise<unknown> {
    this.batcher?.flush();
    return this.calls.run(script, keys, args, binary, deadline);
  }

  /** refuse — why a call must be answered by the failure policy at once, or undefined (call.ts). */
  refuse(budget: Budget): StoreUnavailableError | undefined {
    return this.calls.refuse(budget);
  }

  /** budgetOf — the pending budget of the server a key lives on (call.ts). */
  budgetOf(redisKey: string): Budget {
    return this.calls.budgetOf(redisKey);
  }

  /** noteFailure — counts a failure and remembers why. */
  noteFailure(e: unknown): void {
    this.failures++;
    if (!this.failing) this.failingSince = Date.now();
    this.failing = true;
    this.lastError = e instanceof Error ? e : new Error(String(e));
  }

  // ---- the index of blocks and exemptions (overrides.ts) ----

  /** setOverride — sets the override of the client value `key`, and files it in `index` (see lua/index.lua). */
  setOverride(key: string, request: OverrideRequest, now: number | undefined, index?: IndexRef): Promise<unknown> {
    return this.index.setOverride(key, request, now, index);
  }

  clearOverride(key: string, kind: Override['kind'], index?: IndexRef): Promise<unknown> {
    return this.index.clearOverride(key, kind, index);
  }

  reset(key: string): Promise<unknown> {
    return this.calls.run(resetState, [key], [], false, true);
  }

  /** isCluster — whether the client is a Redis Cluster (the index then has one bucket per master). */
  get isCluster(): boolean {
    return isClusterClient(this.client);
  }

  /** callBuffer — one plain command within the store's timeout, its reply kept as bytes. */
  callBuffer(command: string, ...args: string[]): Promise<unknown> {
    return this.index.callBuffer(command, ...args);
  }

  /** serverTime — the server's clock (TIME), ms. */
  serverTime(): Promise<number> {
    return this.index.serverTime();
  }

  /** placement — the primary tag of every master (listing.ts), from the client's slot table; undefined on a standalone server. */
  placement(): Placement | undefined {
    return this.index.placement();
  }

  /** readHash — a hash of the operators' view as a flat list of fields and values, kept as bytes (lua/bucket.lua). */
  readHash(key: string, field?: string): Promise<unknown> {
    return this.index.readHash(key, field);
  }

  /** register — files a bucket's tag in the registry (Cluster), once per tag and process. */
  register(tag: string, add = true): Promise<void> {
    return this.index.register(tag, add);
  }

  /** listing — every block and exemption in force in the index, for every policy of this store (overrides.ts). */
  listing(now: number | undefined, maxAge = 0): Promise<Listed[]> {
    return this.index.listing(now, maxAge);
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
}

/** resetState — the reset script (lua/reset.lua). */
const resetState = opScript('reset');

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

