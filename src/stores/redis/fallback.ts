/**
 * fallback — what a check answers when Redis does not: onError 'deny' or 'allow' (`unavailable`: reason
 * 'store-unavailable'), or 'memory': a local memory store decides (`Fallback`, one per bound policy), keeping the
 * blocks and exemptions this instance set, lifted or met in a reply, so that they hold while Redis is away, and
 * deciding by the instance's share of the limits (FleetShare: the policy scaled to the fleet's size, fleet.ts).
 * Imports the memory store, the fleet's scaling and the reply's layout (reply.ts: an override's end and reason).
 */
import type { Decision, Override, RuleOutcome } from '../../core/types.js';
import type { Policy } from '../../core/policy.js';
import { localClock } from '../../core/clock.js';
import type { MemoryStore, MemoryTable } from '../memory.js';
import type { ReplyReader } from './reply.js';
import { fleetPolicy } from './fleet.js';

/** UNAVAILABLE_RETRY — the retryAfter of a fail-closed decision, ms: a hint to come back soon, not a promise. */
export const UNAVAILABLE_RETRY = 1000;

/** unavailable — the decision of onError 'deny' (allowed false) or 'allow' (reason 'store-unavailable'). */
export function unavailable(policy: Policy, allowed: boolean): Decision {
  const rules: RuleOutcome[] = policy.rules.map((c) => ({
    name: c.name, algorithm: c.algorithm, allowed, limit: c.limit, remaining: 0,
    retryAfter: allowed ? 0 : UNAVAILABLE_RETRY, resetAfter: 0,
  }));
  return {
    allowed, reason: 'store-unavailable', limit: rules[0].limit, remaining: 0,
    retryAfter: allowed ? 0 : UNAVAILABLE_RETRY, resetAfter: 0, rules,
  };
}

/**
 * FleetShare — the store's fallback memory store, each policy's table in it attached under the policy scaled to the
 * fleet's size N (fleetPolicy; the policy itself while N is 1). When N changes, the next fallback decision moves the
 * table to the newly scaled policy (MemoryStore.succeed: the clients' state converted, what they used carried over
 * and judged by the new share; blocks and exemptions kept).
 */
export class FleetShare {
  /** under — per policy, the N its table was last scaled to, the scaled policy it is attached under, and the table. */
  private readonly under = new WeakMap<Policy, { n: number; scaled: Policy; table: MemoryTable }>();

  constructor(readonly memory: MemoryStore, private readonly size: () => number) {}

  /** table — `policy`'s table, scaled to the fleet's size now. */
  table(policy: Policy): MemoryTable {
    const n = this.size();
    const at = this.under.get(policy);
    if (at !== undefined && at.n === n) return at.table;
    const scaled = fleetPolicy(policy, n);
    const table = (at === undefined ? undefined : this.memory.succeed(at.scaled, scaled, localClock())) ?? this.memory.attach(scaled);
    this.under.set(policy, { n, scaled, table });
    return table;
  }

  /** succeed — a limiter's policy `from` replaced by `to` (RedisStore.succeed): from's table, with its clients, becomes to's. */
  succeed(from: Policy, to: Policy, now: number): void {
    const at = this.under.get(from);
    const n = at?.n ?? 1;
    const scaled = fleetPolicy(to, n);
    const table = this.memory.succeed(at?.scaled ?? from, scaled, now);
    if (table !== undefined) this.under.set(to, { n, scaled, table });
  }

  /** detach — `policy` retired (RedisStore.detach): the memory store forgets the table it holds under its share. */
  detach(policy: Policy): void {
    const at = this.under.get(policy);
    this.under.delete(policy);
    this.memory.detach(at?.scaled ?? policy);
  }
}

/**
 * Fallback — onError 'memory' for one policy: its table in the store's fallback memory store (FleetShare: scaled to
 * the fleet), and the overrides it holds there. `overridden` — the keys the table holds one for (oldest first; at
 * most maxKeys), so that a reply without one lifts it.
 */
export class Fallback {
  /** lastLocal — the fallback's clock, never stepping back. */
  private lastLocal = -Infinity;
  private readonly overridden = new Map<string, Override['kind']>();

  constructor(private readonly share: FleetShare, readonly policy: Policy, private readonly maxKeys: number) {}

  /** table — the policy's table in the fallback store, under its share of the fleet now. */
  get table(): MemoryTable {
    return this.share.table(this.policy);
  }

  /** localNow — the fallback's clock, never stepping back. */
  localNow(): number {
    const local = localClock(); // monotonic, anchored to wall time: a wall-clock step neither freezes nor jumps it
    if (local > this.lastLocal) this.lastLocal = local;
    return this.lastLocal;
  }

  /** decide — the local decision (at `now`, else the local clock), marked `fallback: true`. */
  decide(key: string, cost: number, now: number | undefined): Decision {
    const d = this.table.evaluate(key, cost, now ?? this.localNow());
    d.fallback = true;
    return d;
  }

  /**
   * remember — keeps a block or exemption in the fallback (`left` ms from the local time of the call, Infinity: until
   * lifted), or lifts the fallback's one (kind undefined).
   */
  remember(key: string, now: number | undefined, kind: Override['kind'] | undefined, left = 0, reason?: string): void {
    const fb = this.table;
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
    if (this.overridden.size >= this.maxKeys) {
      const oldest = this.overridden.keys().next().value as string;
      this.remember(oldest, undefined, undefined);
    }
    fb.setOverride(key, { kind, for: left, reason }, now ?? this.localNow());
    this.overridden.set(key, kind);
  }

  /** cleared — Redis lifted `key`'s override of `kind`: lifted here too when it is the one held. */
  cleared(key: string, kind: Override['kind']): void {
    if (this.overridden.get(key) === kind) this.remember(key, undefined, undefined);
  }

  /** learn — what a check's reply says about the key's block or exemption, kept for the fallback. */
  learn(key: string, now: number | undefined, reply: Buffer, reader: ReplyReader): void {
    const kind = reader.kind(reply);
    if (kind < 2) {
      if (this.overridden.size > 0) this.remember(key, now, undefined);
      return;
    }
    this.remember(key, now, kind === 2 ? 'block' : 'exempt', reader.overrideUntil(reply) - reader.overrideNow(reply), reader.overrideReason(reply));
  }
}
