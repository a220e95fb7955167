/**
 * listing — where the Redis store files blocks and exemptions for the operators' view, and how it lists them: one
 * bucket per Redis master (one on a standalone server) for every limiter of a store, so that a listing costs one read
 * per master, whatever the number of slots, limiters or clients.
 *
 * A bucket's keys carry a hash tag chosen to land on its master: the tag of the lowest slot the master serves (from
 * the client's slot table), its *primary tag*. The override scripts run on the client's master and write the
 * client's value and its bucket in one step (the bucket is another slot of the same node: lua/index.lua). A failover
 * keeps the slots, so the promoted replica has the same primary tag and the bucket it replicated. A resharding moves
 * slots: a bucket's key may move to another master with its slot, and a client's value may move away from its
 * bucket. So a listing reads the buckets of the current primary tags and of every tag in a small registry (the tags
 * buckets were filed under: one per master and topology change), and an entry found in a bucket that is not the
 * primary one of its client's master now is checked against the client's value and moved where it belongs
 * (lua/refile.lua, lua/unfile.lua); a registered bucket left empty leaves the registry. Steady state: one bucket read
 * per master and one registry read per listing.
 */
import { tagSlot } from './slot.js';

/** STANDALONE_TAG — the one bucket's tag on a standalone server. */
export const STANDALONE_TAG = 'ov';

/** Bucket — the keys of one bucket (lua/index.lua): its sorted set by end and its hash of details. */
export interface Bucket {
  tag: string;
  idx: string;
  det: string;
}

/** bucketOf — the keys of the bucket of `tag` under `prefix`. */
export function bucketOf(prefix: string, tag: string): Bucket {
  return { tag, idx: `${prefix}{${tag}}:ovz`, det: `${prefix}{${tag}}:ovh` };
}

/** registryOf — the registry of bucket tags under `prefix` (a hash, tag → '1'; Cluster only). */
export function registryOf(prefix: string): string {
  return `${prefix}{ovr}:tags`;
}

/** memberOf — an entry's member: the policy id (8 characters, no ':'), ':', the client key as encoded in its Redis key. */
export function memberOf(policyId: string, encoded: string): string {
  return `${policyId}:${encoded}`;
}

/** splitMember — the policy id and encoded client key of a member (undefined: not one of ours). */
export function splitMember(member: string): { policy: string; encoded: string } | undefined {
  const at = member.indexOf(':');
  return at <= 0 ? undefined : { policy: member.slice(0, at), encoded: member.slice(at + 1) };
}

/**
 * Placement — the primary tag of every master from one reading of the slot table (`ownerOf(slot)`: the master
 * serving a slot, 'host:port', or undefined while unknown). Made per listing and per override (16 384 lookups, ~0.1 ms).
 */
export class Placement {
  /** primary — per master, the lowest slot it serves. */
  readonly primary = new Map<string, number>();
  /** owners — per slot, its master (undefined: unknown). */
  private readonly owners: (string | undefined)[];

  constructor(ownerOf: (slot: number) => string | undefined, private readonly slotTag: (slot: number) => string) {
    const owners = new Array<string | undefined>(16384);
    for (let s = 0; s < 16384; s++) {
      const o = ownerOf(s);
      owners[s] = o;
      if (o !== undefined && !this.primary.has(o)) this.primary.set(o, s);
    }
    this.owners = owners;
  }

  /** tags — the primary tag of every master known. */
  tags(): string[] {
    return [...this.primary.values()].map(this.slotTag);
  }

  /** tagOf — the primary tag of the master serving `slot`, or undefined when the slot's master is not known. */
  tagOf(slot: number): string | undefined {
    const o = this.owners[slot];
    return o === undefined ? undefined : this.slotTag(this.primary.get(o)!);
  }

  /** tagOfKey — the primary tag of the master serving an encoded client key (its Redis key's hash tag). */
  tagOfKey(encoded: string): string | undefined {
    return this.tagOf(tagSlot(encoded));
  }
}
