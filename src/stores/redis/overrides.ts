/**
 * overrides — the index of blocks and exemptions, for the operators' view (the "observation" of the Redis store):
 * the override scripts that set or lift a client's override and file it in its bucket (lua/index.lua), and the
 * listing of every bucket (listing.ts says where buckets live and why), shared by every limiter of a store and
 * reused for `maxAge` ms. Imports the call mechanism (call.ts) for its script calls, the bucket layout (listing.ts)
 * and the keys' tags (keys.ts).
 */
import type { Override } from '../../core/types.js';
import type { OverrideEntry, OverrideRequest } from '../types.js';
import { Script, lua, opScript } from './scripts.js';
import { Placement, STANDALONE_TAG, bucketOf, memberOf, registryOf, splitMember, type Bucket } from './listing.js';
import { decodeKey, slotTag } from './keys.js';
import { tagSlot } from './slot.js';
import { StoreUnavailableError, type Calls } from './call.js';
import type { RedisClient } from './client.js';

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
export function nonLocal(e: unknown): boolean {
  return e instanceof Error && /non local key/i.test(e.message);
}

/** indexed — an override script with the index module (lua/index.lua) before its own code. */
function indexed(name: 'override' | 'unoverride'): Script {
  const base = opScript(name).text;
  const body = lua(name);
  const at = base.lastIndexOf(body);
  return new Script(`${base.slice(0, at)}${lua('index')}\n${base.slice(at)}`);
}
const overrideSet = indexed('override');
const overrideClear = indexed('unoverride');
const pruneScript = new Script(lua('prune'));
const bucketScript = new Script(lua('bucket'));
const registerScript = new Script(lua('register'));
const unfileScript = new Script(lua('unfile'));
const refileScript = opScript('refile');

/** readEntry — one index entry (lua/index.lua: kind, until, since, reason), or undefined when unreadable. */
export function readEntry(member: string, v: Buffer): OverrideEntry | undefined {
  if (!(v instanceof Buffer) || v.length < 17) return undefined;
  const kind = v[0] === 98 ? 'block' : v[0] === 101 ? 'exempt' : undefined;
  if (kind === undefined) return undefined;
  const e: OverrideEntry = { key: member, kind, until: v.readDoubleLE(1), since: v.readDoubleLE(9) };
  if (v.length > 17) e.reason = v.toString('utf8', 17);
  return e;
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


/** OverrideIndex — one store's index: its override scripts and its listing. */
export class OverrideIndex {
  /**
   * calls — the store's call mechanism; client — for plain commands (callBuffer); prefix — the keys' start; nodeOf —
   * a Cluster's master of a slot (undefined: a standalone client).
   */
  constructor(
    private readonly calls: Calls, private readonly client: RedisClient, readonly prefix: string,
    private readonly nodeOf: ((slot: number) => string | undefined) | undefined,
  ) {}

  /** isCluster — whether the client is a Redis Cluster (the index then has one bucket per master). */
  get isCluster(): boolean {
    return (this.client as { isCluster?: boolean }).isCluster === true;
  }

  /**
   * refOf — the bucket the override of a client (its encoded key, namespace included) under policy `id` is filed in
   * (listing.ts, lua/index.lua) and its member there: the one bucket on a standalone server; on a Cluster the primary
   * bucket of the master serving the key's slot (`own`, or that master unknown: the bucket of the key's own slot, on
   * the same master).
   */
  refOf(id: string, encoded: string, own = false): IndexRef {
    let tag = STANDALONE_TAG;
    if (this.isCluster) {
      const slot = tagSlot(encoded);
      tag = (own ? undefined : this.placement()?.tagOf(slot)) ?? slotTag(slot);
    }
    return { ...bucketOf(this.prefix, tag), member: memberOf(id, encoded) };
  }

  /**
   * file — sets the override of the Redis key `redisKey` (policy `id`, client `encoded`) and files it in its bucket;
   * when that bucket is on another master than the client's value (the slot table changed under us), in the bucket
   * of the client's own slot, always on its master, from which a listing moves it to its master's.
   */
  async file(redisKey: string, id: string, encoded: string, request: OverrideRequest, now: number | undefined): Promise<void> {
    let index = this.refOf(id, encoded);
    try {
      await this.setOverride(redisKey, request, now, index);
    } catch (e) {
      if (!nonLocal(e)) throw e;
      index = this.refOf(id, encoded, true);
      await this.setOverride(redisKey, request, now, index);
    }
    // registered after it is written (listing.ts: a listing that empties the registry of it reads it again), once per
    // tag and process; not awaited (a failure only delays the listing of a bucket that is no master's primary one)
    if (this.isCluster) this.register(index.tag).catch(() => undefined);
  }

  /** unfile — lifts the override of `kind` of `redisKey` and removes it from its bucket (the same fallback as file). */
  async unfile(redisKey: string, id: string, encoded: string, kind: Override['kind']): Promise<void> {
    try {
      await this.clearOverride(redisKey, kind, this.refOf(id, encoded));
    } catch (e) {
      if (!nonLocal(e)) throw e;
      await this.clearOverride(redisKey, kind, this.refOf(id, encoded, true));
    }
  }

  /** entryOf — the block or exemption in force at `now` (undefined: the server's clock) of client `key` (encoded: `encoded`) under policy `id`. */
  async entryOf(id: string, encoded: string, key: string, now: number | undefined): Promise<OverrideEntry | undefined> {
    const { det, member } = this.refOf(id, encoded);
    const [raw, t] = await Promise.all([this.readHash(det, member), now ?? this.serverTime()]);
    const e = raw instanceof Buffer ? readEntry(key, raw) : undefined;
    return e !== undefined && e.until > t ? e : undefined;
  }

  /**
   * entriesOf — every block and exemption of policy `id` in namespace `space` (encoded) in force at `now`, from the
   * listing (shared by every limiter of the store and reused for `maxAge` ms), keyed by the client's own key.
   */
  async entriesOf(id: string, space: string, now: number | undefined, maxAge = 0): Promise<OverrideEntry[]> {
    const all = await this.listing(now, maxAge);
    const out: OverrideEntry[] = [];
    for (const { policy, entry } of all) {
      if (policy === id && entry.key.startsWith(space)) out.push({ ...entry, key: decodeKey(entry.key.slice(space.length)) });
    }
    return out;
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
    return this.calls.run(overrideSet, [key], args, false, true).finally(() => {
      this.listed = undefined;
    });
  }

  clearOverride(key: string, kind: Override['kind'], index?: IndexRef): Promise<unknown> {
    const k = kind === 'block' ? 'b' : 'e';
    this.listed = undefined;
    return this.calls.run(overrideClear, [key], index === undefined ? [k] : [k, index.member, index.idx, index.det], false, true).finally(() => {
      this.listed = undefined;
    });
  }

  /** callBuffer — one plain command within the store's timeout, its reply kept as bytes. */
  callBuffer(command: string, ...args: string[]): Promise<unknown> {
    return withTimeout(this.client.callBuffer(command, ...args), this.calls.timeout);
  }

  /** serverTime — the server's clock (TIME), ms. */
  async serverTime(): Promise<number> {
    const r = (await this.callBuffer('TIME')) as Buffer[];
    return Number(String(r[0])) * 1000 + Number(String(r[1])) / 1000;
  }

  /** placement — the primary tag of every master (listing.ts), from the client's slot table; undefined on a standalone server. */
  placement(): Placement | undefined {
    const nodeOf = this.nodeOf;
    return nodeOf === undefined ? undefined : new Placement(nodeOf, slotTag);
  }

  /** readHash — a hash of the operators' view (a bucket, the registry) as a flat list of fields and values, kept as bytes (lua/bucket.lua). */
  async readHash(key: string, field?: string): Promise<unknown> {
    return this.calls.run(bucketScript, [key], field === undefined ? [] : [field], true);
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
    await this.calls.run(registerScript, [registry], [tag, add ? '1' : '0']);
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
        const holds = await this.calls.run(refileScript, [`${this.prefix}{${entry.key}}:${policy}`], [to.idx, to.det, a.member, a.value as unknown as string, entry.until === Infinity ? 'inf' : String(entry.until), entry.kind === 'block' ? 'b' : 'e'], false, true);
        if (holds === 1 && !found.has(a.member)) found.set(a.member, a.listed);
        await this.calls.run(unfileScript, [a.bucket.idx, a.bucket.det], [a.member, a.value as unknown as string]);
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
        return this.calls.run(pruneScript, [b.idx, b.det], [now === undefined ? '' : String(now)]);
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
}
