import type { Decision } from './core/types.js';
import { RatekeeperError, show } from './core/errors.js';
import type { Limiter } from './limiter.js';

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
   * said). State is charged only when `allowed` is true; when another item refused, an item that admitted is not
   * charged (its `remaining` is from its uncharged state) and one that refused is charged as its accounting says.
   */
  decisions: Decision[];
}

/**
 * checkAll — decides several (limiter, key, cost) items all-or-nothing, as one request: admitted only when every
 * item admits it, and then every item is charged; refused otherwise, and then no item that admitted is charged.
 *
 * PLACEHOLDER (to be replaced by the store-level implementation): decides the items one after the other and
 * does not give back what earlier items were charged.
 */
export async function checkAll(items: readonly CheckAllItem[], options?: { now?: number }): Promise<CheckAllResult> {
  if (!Array.isArray(items) || items.length === 0) throw new RatekeeperError(`checkAll takes a non-empty array of { limiter, key, cost? }, got ${show(items)}`, 'ERR_ARGUMENT');
  const decisions: Decision[] = [];
  let allowed = true;
  for (const it of items) {
    const d = await it.limiter.check(it.key, { cost: it.cost ?? 1, now: options?.now });
    decisions.push(d);
    if (!d.allowed) allowed = false;
  }
  return { allowed, decisions };
}
