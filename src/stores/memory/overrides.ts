/**
 * stores/memory/overrides — one memory table's blocks and exemptions: the operator's (bounded, never evicted: past
 * the bound a new one is refused) and the automatic blocks (`autoBlock`, a budget of their own: past it the oldest
 * ends early). Expired ones are reclaimed without timers: a few of the oldest looked at per set, and one found
 * expired when its key is checked.
 */
import type { Override } from '../../core/types.js';
import { RatekeeperError, show } from '../../core/errors.js';
import type { OverrideEntry, OverrideRequest } from '../types.js';

/** SWEEP — expired overrides looked for per override set: enough to reclaim them faster than they are made. */
const SWEEP = 2;

/** Listed — an override as the table keeps it: with `since`, ms when it was set (for listing). */
export interface Listed extends Override {
  since: number;
}

/** entry — an override as listed (OverrideEntry), with its key. */
export function entry(key: string, o: Listed): OverrideEntry {
  const e: OverrideEntry = { key, kind: o.kind, until: o.until, since: o.since };
  if (o.reason !== undefined) e.reason = o.reason;
  return e;
}

/** Overrides — the blocks and exemptions of one table, at most `maxKeys` of each kind (operator's, automatic). */
export class Overrides {
  /**
   * overridden — the operator's blocks and exemptions by key, in the order they were set (or last swept): at most
   * maxKeys, never evicted (past it a new one is refused with an error). Each set looks at the SWEEP oldest ones and
   * removes those expired (moving the others to the back), so expired ones are reclaimed without timers; an expired
   * one is also removed when its key is checked.
   */
  private readonly overridden = new Map<string, Listed>();
  /**
   * automatic — the automatic blocks (policy.autoBlock) by key, in the order they were set, which is the order they
   * end (one duration per policy): at most maxKeys, a budget of their own, so they never push out an operator's; at
   * the bound the oldest one ends early. A key is in at most one of `overridden` and `automatic`.
   */
  private readonly automatic = new Map<string, Listed>();

  constructor(readonly maxKeys: number) {}

  /** any — whether any override is held (expired ones included until swept): the hot path looks only then. */
  get any(): boolean {
    return this.overridden.size > 0 || this.automatic.size > 0;
  }

  /** count, autoCount — the operator's overrides and the automatic blocks held now (expired ones included until swept). */
  get count(): number {
    return this.overridden.size;
  }

  get autoCount(): number {
    return this.automatic.size;
  }

  /**
   * set — an operator's block or exemption (replacing the key's own, manual or automatic). When maxKeys of them are
   * in force already, a new key's is refused with an error naming the bound: nothing is lifted to make room.
   */
  set(key: string, request: OverrideRequest, now: number): void {
    const o: Listed = { kind: request.kind, until: now + request.for, since: now };
    if (request.reason !== undefined) o.reason = request.reason;
    const had = this.overridden.delete(key);
    this.sweep(now);
    if (!had && this.overridden.size >= this.maxKeys) {
      // every one may be live but the SWEEP oldest: look at them all once before refusing
      for (const [k, v] of this.overridden) if (v.until <= now) this.overridden.delete(k);
      if (this.overridden.size >= this.maxKeys) {
        throw new RatekeeperError(
          `the memory store holds ${this.maxKeys} blocks and exemptions set by an operator for this limiter (memoryStore maxKeys), all in force: lift one (unblock, unexempt) or raise maxKeys; none was lifted to make room for ${show(key)}`,
          'ERR_ARGUMENT',
        );
      }
    }
    this.automatic.delete(key);
    this.overridden.set(key, o);
  }

  /** clear — lifts `key`'s override if it is of `kind` (an automatic block is lifted by unblock too). */
  clear(key: string, kind: Override['kind']): void {
    if (this.overridden.get(key)?.kind === kind) this.overridden.delete(key);
    else if (kind === 'block') this.automatic.delete(key);
  }

  /**
   * auto — starts the automatic block of `key` (no block or exemption in force) at `now`, lasting `ms`, in its own
   * budget: the ended ones at the front are dropped, and at maxKeys the oldest ends early.
   */
  auto(key: string, now: number, ms: number, reason: string): void {
    const auto = this.automatic;
    auto.delete(key);
    for (let i = 0; i < SWEEP && auto.size > 0; i++) {
      const [k, v] = auto.entries().next().value as [string, Listed];
      if (v.until > now) break;
      auto.delete(k);
    }
    if (auto.size >= this.maxKeys) auto.delete(auto.keys().next().value as string);
    auto.set(key, { kind: 'block', until: now + ms, since: now, reason });
  }

  /** live — `key`'s block or exemption in force at `now` (the operator's, else an automatic block); an ended one is removed. */
  live(key: string, now: number): Listed | undefined {
    const map = this.overridden.has(key) ? this.overridden : this.automatic;
    const o = map.get(key);
    if (o !== undefined && o.until <= now) {
      map.delete(key);
      return undefined;
    }
    return o;
  }

  /** list — every block and exemption in force at `now` (ms); expired ones are removed. */
  list(now: number): OverrideEntry[] {
    const out: OverrideEntry[] = [];
    for (const map of [this.overridden, this.automatic]) {
      for (const [key, o] of map) {
        if (o.until <= now) {
          map.delete(key);
          continue;
        }
        out.push(entry(key, o));
      }
    }
    return out;
  }

  /** clearAll — forgets every override. */
  clearAll(): void {
    this.overridden.clear();
    this.automatic.clear();
  }

  /** sweep — removes the expired ones among the SWEEP oldest operator's overrides, moving the live ones to the back. */
  private sweep(now: number): void {
    for (let i = 0; i < SWEEP && this.overridden.size > 0; i++) {
      const [key, o] = this.overridden.entries().next().value as [string, Listed];
      this.overridden.delete(key);
      if (o.until > now) this.overridden.set(key, o);
    }
  }
}
