/**
 * multi — checkAll / checkAllSync: several (limiter, key, cost) items decided all-or-nothing as one request. A
 * limiter is seen only through its {@link Combinable} view (limiter/combinable.ts): its store and bound store, its
 * clock, its denial cache and observer, and the decisions of parts not asked or vetoed.
 */
import type { Decision } from './core/types.js';
import { RatekeeperError, show } from './core/errors.js';
import { checkOptions } from './core/options.js';
import { Limiter, key_, cost_, type Combinable } from './limiter.js';
import type { BoundStore, Part, Store } from './stores/types.js';

/** ITEM_FIELDS — the names a checkAll item may have. */
const ITEM_FIELDS: ReadonlySet<string> = new Set(['limiter', 'key', 'cost']);

/** CheckAllItem — one part of a compound request: a limiter (its policy), the client's key for it, and the cost. */
export interface CheckAllItem {
  limiter: Limiter;
  key: string;
  /** cost — what this part spends, a finite number >= 0. @default 1 */
  cost?: number;
}

/** CheckAllResult — the compound decision. */
export interface CheckAllResult {
  /** allowed — every item's own decision admitted the request (a dry-run or exempt item never refuses). */
  allowed: boolean;
  /**
   * decisions — one per item, in order: each item's own verdict (`allowed` is what its rules, block or exemption
   * said). When the request is admitted every item is charged. When it is refused, an item that admitted is not
   * charged — it reports `allowed: true`, `retryAfter` 0 and `remaining` from its uncharged state (its strict rules
   * excepted: they are charged as for a refused request) — and one that refused is charged as its accounting says.
   * Items naming the same state (the same limiter and key) are decided together, as one request of their summed
   * cost, and share one decision.
   */
  decisions: Decision[];
  /** refusedBy — the index of the item whose refusal refused the request (the first one), −1 when admitted. */
  refusedBy: number;
  /**
   * cached — true when a denial cache answered (the store was not asked and nothing was charged): only
   * `decisions[refusedBy]` was decided; every other item's decision only says it was not charged (allowed, with
   * remaining 0: unknown).
   */
  cached?: true;
}

/** CheckAllOptions — the compound request's time. */
export interface CheckAllOptions {
  /** now — the request's time in ms for every item, instead of the clock's (tests, replays). */
  now?: number;
}

/**
 * Plan — a compound request made ready for a store: its parts (one per distinct state: the same limiter and key
 * merged, costs summed), which part each item is, the parts' limiters, the common store (undefined when the items
 * use several) and the time.
 */
interface Plan {
  parts: Part[];
  /** of — item i is part of[i]. */
  of: number[];
  limiters: Combinable[];
  store: Store | undefined;
  now: number | undefined;
  /** local — the local time the denial caches are read at, per part (NaN: the part's limiter has none). */
  local: number[] | undefined;
  epochs: number[] | undefined;
}

/**
 * checkAll — decides several (limiter, key, cost) items all-or-nothing, as one request: admitted only when every
 * item admits it, and then every item is charged; refused otherwise, and then no item that admitted is charged.
 * - memory store: exact, decided in one synchronous step (see {@link checkAllSync}).
 * - Redis: one round trip, one script deciding every item on the stored state and then charging all or none.
 * - Redis Cluster (keys in several slots), or items on different stores: every item decides and charges at once,
 *   each atomically, and when one refused, what the others were charged is given back (a refund, a second round
 *   trip): never more admitted than a limit, but in between another request may be refused by capacity that is then
 *   given back.
 * Blocks refuse (and charge nothing), exemptions admit and charge nothing, dry-run items never refuse (their state
 * changes as enforcement would change it given the other items' verdicts). A denial cache's refusal of one item
 * refuses the request without asking the store. Failure policies apply as for `check`. Rejects only on misuse.
 */
export function checkAll(items: readonly CheckAllItem[], options?: CheckAllOptions): Promise<CheckAllResult> {
  return decideAll(items, options, false);
}

/**
 * checkAllTrusted, checkAllSyncTrusted — checkAll and checkAllSync for items their caller built itself and vouches
 * for (the limiter service's plan, server/plan.ts: a Limiter, a key of 1 to MAX_KEY_LENGTH characters, a cost from
 * 0 to MAX_AMOUNT or undefined for 1): the same decision without checking each item's key and cost again, and an
 * item's other fields are not looked at (the service hands its plan's items as they are). Not exported from the
 * package (src/index.ts): a library user's items are always checked.
 */
export function checkAllTrusted(items: readonly CheckAllItem[], options?: CheckAllOptions): Promise<CheckAllResult> {
  return decideAll(items, options, true);
}

export function checkAllSyncTrusted(items: readonly CheckAllItem[], options?: CheckAllOptions): CheckAllResult {
  return decideAllSync(items, options, true);
}

/** decideAll — checkAll, its items checked unless `trusted`. */
function decideAll(items: readonly CheckAllItem[], options: CheckAllOptions | undefined, trusted: boolean): Promise<CheckAllResult> {
  try {
    const plan = prepare(items, options, trusted);
    const hit = cachedRefusal(plan, items);
    if (hit !== undefined) return Promise.resolve(hit);
    const out = plan.store?.evaluateAll?.(plan.parts, plan.now);
    if (out === undefined) return decideThenRefund(plan).then((d) => result(plan, d));
    if (Array.isArray(out)) return Promise.resolve(result(plan, out));
    return (out as Promise<Decision[]>).then((d) => result(plan, d));
  } catch (e) {
    return Promise.reject(e);
  }
}

/** checkAllSync — `checkAll` without the promise, for items on one synchronous store (the memory store). Throws on misuse. */
export function checkAllSync(items: readonly CheckAllItem[], options?: CheckAllOptions): CheckAllResult {
  return decideAllSync(items, options, false);
}

/** decideAllSync — checkAllSync, its items checked unless `trusted`. */
function decideAllSync(items: readonly CheckAllItem[], options: CheckAllOptions | undefined, trusted: boolean): CheckAllResult {
  const plan = prepare(items, options, trusted);
  if (plan.store === undefined || !allSync(plan.parts) || plan.store.evaluateAll === undefined) {
    throw new RatekeeperError(`checkAllSync needs every item on one synchronous store such as memoryStore(); use checkAll() with these`, 'ERR_ARGUMENT');
  }
  const hit = cachedRefusal(plan, items);
  if (hit !== undefined) return hit;
  return result(plan, plan.store.evaluateAll(plan.parts, plan.now) as Decision[]);
}

/** allSync — every part's bound store answers synchronously. */
function allSync(parts: readonly Part[]): boolean {
  for (let k = 0; k < parts.length; k++) if (!parts[k].bound.sync) return false;
  return true;
}

/**
 * prepare — validates the items (their fields, key and cost: not when `trusted`, see checkAllTrusted) and plans the
 * parts; throws on misuse.
 */
function prepare(items: readonly CheckAllItem[], options: CheckAllOptions | undefined, trusted: boolean): Plan {
  if (!Array.isArray(items) || items.length === 0) throw new RatekeeperError(`checkAll takes a non-empty array of { limiter, key, cost? }, got ${show(items)}`, 'ERR_ARGUMENT');
  const n = items.length;
  // one part per distinct state, at most one per item: arrays of that length (no backing store grown by push), cut
  // to the count when items merged
  const parts = new Array<Part>(n);
  const of = new Array<number>(n);
  const limiters = new Array<Combinable>(n);
  let m = 0;
  let store: Store | undefined;
  let caches = false;
  for (let i = 0; i < n; i++) {
    const it = items[i];
    let key: string;
    let cost: number;
    if (trusted) {
      key = it.key;
      cost = it.cost ?? 1;
    } else {
      if (typeof it !== 'object' || it === null || !(it.limiter instanceof Limiter)) {
        throw new RatekeeperError(`checkAll items[${i}].limiter must be a Limiter (made by limiter()), got ${show(it === null || typeof it !== 'object' ? it : it.limiter)}`, 'ERR_ARGUMENT');
      }
      checkOptions(it, ITEM_FIELDS, `checkAll items[${i}]`, 'ERR_ARGUMENT');
      key = key_(it.key);
      cost = cost_(it.cost === undefined ? undefined : { cost: it.cost }, `checkAll items[${i}]`);
    }
    const lim: Combinable = it.limiter;
    const bound = lim.bound;
    if (i === 0) store = lim.store;
    else if (lim.store !== store) store = undefined;
    if (lim.cachesDenials) caches = true;
    let j = -1;
    if (n <= 8) {
      for (let k = 0; k < m; k++) if (parts[k].bound === bound && parts[k].key === key) j = k;
    } else {
      for (let k = 0; k < m && j < 0; k++) if (parts[k].bound === bound && parts[k].key === key) j = k;
    }
    if (j >= 0) {
      parts[j].cost += cost;
      of[i] = j;
    } else {
      of[i] = m;
      parts[m] = { bound, key, cost };
      limiters[m++] = lim;
    }
  }
  if (m < n) {
    parts.length = m;
    limiters.length = m;
  }
  if (store === undefined || store.evaluateAll === undefined) {
    for (let k = 0; k < parts.length; k++) {
      if (parts[k].bound.refund === undefined) {
        throw new RatekeeperError(`checkAll: items on different stores (or a store without evaluateAll) are decided and then refunded, and the store of items[${of.indexOf(k)}] cannot refund`, 'ERR_ARGUMENT');
      }
    }
  }
  // One time for every part: the explicit one, else the store's own clock (one TIME in the script), else ours.
  let now = options?.now;
  if (now !== undefined) {
    now = limiters[0].time({ now }); // the limiter's own check of an explicit time (finite, within the documented range)
  } else if (!(store !== undefined && parts[0].bound.ownClock)) {
    now = limiters[0].tick();
  }
  let local: number[] | undefined;
  let epochs: number[] | undefined;
  if (caches) {
    local = limiters.map((l) => (l.cachesDenials ? now ?? l.tick() : Number.NaN));
    epochs = limiters.map((l) => l.denialEpoch);
  }
  return { parts, of, limiters, store, now, local, epochs };
}

/** cachedRefusal — the request refused by a denial cache's entry for one of its parts, or undefined (ask the store). */
function cachedRefusal(plan: Plan, items: readonly CheckAllItem[]): CheckAllResult | undefined {
  const local = plan.local;
  if (local === undefined) return undefined;
  for (let k = 0; k < plan.parts.length; k++) {
    const lim = plan.limiters[k];
    if (!lim.cachesDenials) continue;
    const p = plan.parts[k];
    const hit = lim.denied(p.key, p.cost, local[k]);
    if (hit === undefined) continue;
    const decisions = items.map((_, i) => (plan.of[i] === k ? hit : plan.limiters[plan.of[i]].unasked()));
    return { allowed: false, decisions, refusedBy: plan.of.indexOf(k), cached: true };
  }
  return undefined;
}

/** result — the compound result from the parts' decisions; refusals are remembered by the parts' denial caches. */
function result(plan: Plan, parts: Decision[]): CheckAllResult {
  const { of } = plan;
  if (plan.local !== undefined) {
    for (let k = 0; k < parts.length; k++) {
      const lim = plan.limiters[k];
      if (lim.cachesDenials) lim.remember(plan.parts[k].key, plan.parts[k].cost, plan.local[k], parts[k], (plan.epochs as number[])[k]);
    }
  }
  for (let k = 0; k < parts.length; k++) plan.limiters[k].record(plan.parts[k].key, plan.parts[k].cost, parts[k], plan.now);
  const n = of.length;
  // no two items merged: item i is part i, and the parts' decisions (a fresh array from the store) are the items'
  const decisions = parts.length === n ? parts : new Array<Decision>(n);
  let refusedBy = -1;
  for (let i = 0; i < n; i++) {
    const d = parts[of[i]];
    decisions[i] = d;
    if (refusedBy < 0 && !d.allowed) refusedBy = i;
  }
  return { allowed: refusedBy < 0, decisions, refusedBy };
}

/**
 * decideThenRefund — the compound request where no single atomic step can decide it (Redis Cluster with keys in
 * several slots, items on different stores): every part decides and is charged at once (each atomically), and when
 * one refused, every part that was charged as admitted is given back its cost on its leaky rules (its strict rules
 * keep the charge, as for any refused request), and reports from the refunded state. A refund that fails leaves
 * the charge (fails safe: it never admits more).
 */
async function decideThenRefund(plan: Plan): Promise<Decision[]> {
  const { parts, now } = plan;
  const pending = parts.map((p) => p.bound.evaluate(p.key, p.cost, now));
  const decisions = await Promise.all(pending);
  let all = true;
  for (const d of decisions) if (!d.allowed) all = false;
  if (all) return decisions;
  await Promise.all(parts.map(async (p, k) => {
    const d = decisions[k];
    if (d.reason !== 'allowed' || !(p.cost > 0)) return;
    try {
      const after = await (p.bound as Required<BoundStore>).refund(p.key, p.cost, now, true);
      decisions[k] = plan.limiters[k].vetoed(d, after);
    } catch {
      // the charge stays
    }
  }));
  return decisions;
}
