/**
 * limiter/observation — the operators' view of one limiter (docs/admin.md): the heaviest clients (`top`), one
 * client's state (`inspect`), the blocks and exemptions in force, and the counters (`stats`). Functions over the
 * narrow {@link Observed} view, called by the Limiter's methods of the same names; nothing here is on the hot path.
 */
import { RatekeeperError, show } from '../core/errors.js';
import type { BoundStore, OverrideEntry } from '../stores/types.js';
import type { Observer, Stats } from '../observe/observer.js';
import type { Sharing } from '../observe/sharing.js';
import { LIST_OPTIONS, PEEK_OPTIONS, TOP_OPTIONS, callOptions, key_, type CheckOptions, type Inspection, type ListOptions, type TopEntry, type TopOptions } from './options.js';
import type { Listing } from './listing.js';

/** Observed — what the operators' view needs of its limiter: the bound store, the observer and its sharing, the clock. */
export interface Observed {
  readonly bound: BoundStore;
  readonly observer: Observer | undefined;
  readonly sharing: Sharing | undefined;
  time(options: CheckOptions | undefined): number | undefined;
  tick(): number;
}

/** observing — the limiter's observer, or an error naming `what` needs it. */
function observing(l: Observed, what: string): Observer {
  if (l.observer === undefined) throw new RatekeeperError(`${what}() needs a limiter made with { observe: true }`, 'ERR_ARGUMENT');
  return l.observer;
}

/** top — Limiter.top: the heaviest clients now, each with whether it is blocked or exempt. */
export async function top(l: Observed, listing: Listing, options: TopOptions): Promise<TopEntry[]> {
  callOptions(options, TOP_OPTIONS, 'top');
  const obs = observing(l, 'top');
  const n = options.n ?? 10;
  if (!Number.isSafeInteger(n) || n < 1) throw new RatekeeperError(`top.n must be an integer >= 1, got ${show(options.n)}`, 'ERR_ARGUMENT');
  const by = options.by ?? 'rate';
  if (by !== 'rate' && by !== 'refused') throw new RatekeeperError(`top.by must be 'rate' or 'refused', got ${show(options.by)}`, 'ERR_ARGUMENT');
  const now = options.now ?? l.tick();
  const list = l.sharing !== undefined ? await l.sharing.merged(n, now, by) : obs.top(n, now, by);
  const overrides = new Map<string, OverrideEntry>();
  if (list.length > 0) for (const o of await listing.overrides(l, options.now, options.maxAge)) overrides.set(o.key, o);
  return list.map((e) => {
    const kind = overrides.get(e.key)?.kind;
    return { ...e, blocked: kind === 'block', exempt: kind === 'exempt' };
  });
}

/** inspect — Limiter.inspect: `key`'s state now (a cost-0 decision), its block or exemption, its observed rate. */
export async function inspect(l: Observed, key: string, options: { now?: number }): Promise<Inspection> {
  callOptions(options, PEEK_OPTIONS, 'inspect');
  const k = key_(key);
  const now = l.time(options);
  const decision = await l.bound.evaluate(k, 0, now);
  const out: Inspection = { key: k, decision };
  const o = l.bound.override === undefined ? undefined : await l.bound.override(k, now);
  if (o !== undefined) out.override = o;
  const seen = l.observer?.hitters.get(k, options.now ?? l.tick());
  if (seen !== undefined) out.observed = seen;
  return out;
}

/** listed — Limiter.blocks and exemptions: the overrides of `kind` in force now. */
export async function listed(l: Observed, listing: Listing, kind: 'block' | 'exempt', options: ListOptions): Promise<OverrideEntry[]> {
  callOptions(options, LIST_OPTIONS, kind === 'block' ? 'blocks' : 'exemptions');
  return (await listing.overrides(l, options.now, options.maxAge)).filter((o) => o.kind === kind);
}

/** stats — Limiter.stats: decisions by outcome and by refusing rule. */
export function stats(l: Observed, options: { from?: number; now?: number }): Stats {
  return observing(l, 'stats').stats(options.now ?? l.tick(), options.from);
}
