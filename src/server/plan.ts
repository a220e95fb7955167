/**
 * plan — what an RLS request asks, before anything is decided: each descriptor normalised (request.ts), then
 * match (each descriptor to its configured limit, or to its own limit; the configured limit's client looked at
 * beside an own limit) → filter (unlimited: OK; a requests_per_unit: 0 limit: refused or looked at; a limit another
 * matched limit `replaces`: OK; no limiter: OK) → the live descriptors, which the service decides all-or-nothing.
 */
import type { Limiter } from '../limiter.js';
import { MAX_KEY_LENGTH } from '../limiter.js';
import { MAX_AMOUNT } from '../core/rules.js';
import { formatDuration } from '../core/duration.js';
import type { LimitSpec, Match, ServiceConfig } from './config/types.js';
import { MAX_UINT32, UNIT_MS, windowLeft } from './envoy.js';
import type { Metrics } from './metrics.js';
import type { Overrides } from './overrides.js';
import { BadRequest, duration, rememberLimit, type RlsEntry, type RlsRateLimit, type RlsRequest, type RlsStatus } from './rls.js';
import { descriptorCost, keyTooLong, ownLimit, requestCost, requestDescriptors } from './request.js';
import type { Runtime } from './runtime.js';

/** Item — one descriptor matched to a limit. */
export interface Item {
  index: number;
  spec: LimitSpec;
  /** rt, limiter — the limit's runtime and limiter; undefined for a requests_per_unit: 0 limit (never decided). */
  rt: Runtime | undefined;
  limiter: Limiter | undefined;
  /** key — the client's key in the limiter (Match.client). */
  key: string;
  cost: number;
  /** report — the limit's current_limit (undefined for a requests_per_unit: 0 limit: its status has it). */
  report: RlsRateLimit | undefined;
  metricKey: string;
  /** fromRequest — metricKey holds request values (detailed_metric, value_to_metric): it counts against the metrics' series cap. */
  fromRequest: boolean;
  /** own — the request's own limit (descriptor.limit), not a configured one. */
  own: boolean;
}

/** Guard — a configured limit's client looked at for its block or exemption (see Plan.guards). */
export interface Guard {
  index: number;
  limiter: Limiter;
  key: string;
}

/** Plan — a request's descriptors: the statuses answered already, and the items still to decide. */
export interface Plan {
  domain: string;
  statuses: RlsStatus[];
  live: Item[];
  /** refused — a descriptor refused it already (a deny-all limit): the live items are only looked at. */
  refused: boolean;
  /**
   * guards — for a descriptor with its own limit that also matches a configured limit, that limit's client, looked at
   * (cost 0) in the same all-or-nothing decision: an operator's block or exemption of the client holds whatever
   * limit the request carries (a block refuses the request and charges nothing; an exemption answers OK).
   */
  guards: Guard[] | undefined;
}

/** PlanOptions — the service's options a plan reads. */
export interface PlanOptions {
  shadowMode?: boolean;
  clock?: { now(): number };
  metrics?: Metrics;
}

/**
 * plan — the request normalised, matched and filtered (see the file's comment), in one pass over the descriptors
 * (then a second only when a limit `replaces` another). Throws BadRequest for a request it cannot decide, before
 * anything is charged or counted. `limits` — the configured limits' runtimes by LimitSpec id.
 */
export function plan(req: RlsRequest, cfg: ServiceConfig | undefined, limits: ReadonlyMap<string, Runtime>, overrides: Overrides, options: PlanOptions): Plan {
  const descriptors = requestDescriptors(req);
  const domain = req.domain!;
  const base = requestCost(req);
  const statuses = new Array<RlsStatus>(descriptors.length);
  // at most one item per descriptor: an array of that length (no backing store grown by push), cut to the count
  const items = new Array<Item>(descriptors.length);
  let count = 0;
  /** total — the items' summed cost: past MAX_AMOUNT, some state may be asked for more than a cost can be. */
  let total = 0;
  let replacing: Set<string> | undefined;
  let denied: Item[] | undefined;
  let guards: Guard[] | undefined;
  const known = cfg !== undefined && cfg.hasDomain(domain);
  for (let i = 0; i < descriptors.length; i++) {
    // normalise (request.ts), then match: the descriptor's own limit (and the configured limit's client, guarded),
    // else the configured one
    const d = descriptors[i];
    const cost = descriptorCost(domain, d, base, i);
    const o = ownLimit(d, i);
    let m: Match | undefined;
    if (known) {
      const entries = d.entries ?? NO_ENTRIES;
      if (o !== undefined) {
        m = cfg.override(domain, entries, o);
        const base = m === undefined ? undefined : cfg.match(domain, entries);
        const brt = base === undefined || base.limit.unlimited || base.limit.denyAll ? undefined : limits.get(base.limit.id);
        // the guard's key is held to the cap as a live item's (the decision trusts the service's keys): escaping can
        // lengthen it past the cap as sent, and the refusal names the descriptor
        if (brt !== undefined && base !== undefined) {
          if (base.keyLength > MAX_KEY_LENGTH) throw keyTooLong(i, base.keyLength);
          (guards ??= []).push({ index: i, limiter: brt.limiter, key: base.client });
        }
      } else {
        m = cfg.match(domain, entries);
      }
    }
    if (m === undefined) {
      statuses[i] = NO_LIMIT;
      continue;
    }
    const spec = m.limit;
    if (spec.replaces.length > 0) for (const r of spec.replaces) (replacing ??= new Set()).add(r);
    // filter: an unlimited limit, and a requests_per_unit: 0 one, answer without a decision
    if (spec.unlimited) {
      statuses[i] = UNLIMITED;
      continue;
    }
    // a metric key other than the config path holds request values (a config path never does)
    const fromRequest = m.metricKey !== spec.path;
    if (spec.denyAll) {
      statuses[i] = denyStatus(spec, cost, options);
      if (cost > 0) (denied ??= []).push({ index: i, spec, rt: undefined, limiter: undefined, key: m.client, cost, report: undefined, metricKey: m.metricKey, fromRequest, own: o !== undefined });
      continue;
    }
    const rt = o !== undefined ? overrides.runtime(spec, i) : limits.get(spec.id);
    if (rt === undefined) {
      statuses[i] = NO_LIMIT;
      continue;
    }
    // escaping (`%XX`) can lengthen a key under the cap as sent past it
    if (m.keyLength > MAX_KEY_LENGTH) throw keyTooLong(i, m.keyLength);
    // an own limit matches a descriptor of no entries too, whose client key is then empty (a configured one never does)
    if (m.client.length === 0) throw new BadRequest(`descriptors[${i}].entries`, `must not be empty when the descriptor carries its own limit: its entries are the client's key`);
    total += cost;
    items[count++] = { index: i, spec, rt, limiter: rt.limiter, key: m.client, cost, report: currentLimitOf(spec), metricKey: m.metricKey, fromRequest, own: o !== undefined };
  }
  if (count < items.length) items.length = count;
  if (total > MAX_AMOUNT) checkTotals(items);
  // filter: the limits another matched limit replaces are answered OK, undecided
  const live = replacing === undefined ? items : withoutReplaced(items, denied, replacing, statuses);
  let refused = false;
  for (const st of statuses) if (st !== undefined && st.code === 'OVER_LIMIT') refused = true;
  const metrics = options.metrics;
  if (metrics !== undefined && denied !== undefined) {
    for (const x of denied) {
      if (replaced(x.spec, replacing)) continue;
      metrics.refused(domain, x.metricKey, x.spec.name ?? denyRuleName(x.spec), x.cost, x.spec.shadowMode || options.shadowMode === true, x.fromRequest);
    }
  }
  return { domain, statuses, live, refused, guards };
}

const NO_ENTRIES: readonly RlsEntry[] = [];

/** withoutReplaced — the items no other matched limit replaces; the replaced ones (and replaced deny-all ones) answered OK. */
function withoutReplaced(items: Item[], denied: Item[] | undefined, replacing: Set<string>, statuses: RlsStatus[]): Item[] {
  const live: Item[] = [];
  for (const it of items) {
    if (replaced(it.spec, replacing)) statuses[it.index] = NO_LIMIT;
    else live.push(it);
  }
  if (denied !== undefined) for (const x of denied) if (replaced(x.spec, replacing)) statuses[x.index] = NO_LIMIT;
  return live;
}

/** NO_LIMIT — the status of a descriptor no limit decides (none matched, or replaced); UNLIMITED — of an unlimited one. */
const NO_LIMIT: RlsStatus = Object.freeze({ code: 'OK', limit_remaining: 0 });
const UNLIMITED: RlsStatus = Object.freeze({ code: 'OK', limit_remaining: MAX_UINT32 });

/** replaced — another matched limit of the request names `spec` in its `replaces`: it is not evaluated. */
function replaced(spec: LimitSpec, replacing: Set<string> | undefined): boolean {
  return replacing !== undefined && spec.name !== undefined && replacing.has(spec.name);
}

/**
 * denyStatus — a requests_per_unit: 0 limit's answer. hits_addend 0 only looks, and a look at it is within it
 * (0 + 0 <= 0), as in envoy; any other hit is over (envoy's "black list"), not charged, so nothing to decide: OVER_LIMIT
 * (OK in shadow mode; OK, undecided, when another limit of the request replaces it: see withoutReplaced).
 */
function denyStatus(spec: LimitSpec, cost: number, options: PlanOptions): RlsStatus {
  const shadow = cost === 0 || spec.shadowMode || options.shadowMode === true;
  return { code: shadow ? 'OK' : 'OVER_LIMIT', current_limit: currentLimitOf(spec), limit_remaining: 0, duration_until_reset: duration(windowLeft(spec.report?.unit, options.clock?.now() ?? Date.now())) };
}

/**
 * currentLimitOf — how a limit appears as current_limit: its report (the first rule's rate per unit) and name. Built
 * once per limit (a LimitSpec does not change once loaded) and frozen: every status of the limit shares it, and the
 * /json answer writes its text once (rls.ts, limitText).
 */
export function currentLimitOf(spec: LimitSpec): RlsRateLimit {
  let out = CURRENT_LIMITS.get(spec);
  if (out !== undefined) return out;
  const r = spec.report;
  const l: RlsRateLimit = { requests_per_unit: r?.requestsPerUnit ?? Math.floor(spec.rules[0].limit), unit: r?.unit ?? 'UNKNOWN' };
  if (spec.name !== undefined) l.name = spec.name;
  out = rememberLimit(l);
  CURRENT_LIMITS.set(spec, out);
  return out;
}

/** CURRENT_LIMITS — each limit's current_limit (currentLimitOf), dropped with its LimitSpec. */
const CURRENT_LIMITS = new WeakMap<LimitSpec, RlsRateLimit>();

/** denyRuleName — the rule label of an unnamed requests_per_unit: 0 limit: `0/1m` (or `0` without a unit). */
function denyRuleName(spec: LimitSpec): string {
  const unit = spec.report?.unit;
  return unit === undefined || unit === 'UNKNOWN' ? '0' : `0/${formatDuration(UNIT_MS[unit])}`;
}

/**
 * checkTotals — throws a BadRequest naming the descriptor at which one state (a limiter and a key: duplicate
 * descriptors are one request of their summed cost) is asked for more than MAX_AMOUNT, before anything is charged.
 * Reads every item a limiter was found for, replaced ones too (as before the renovation).
 */
function checkTotals(items: readonly Item[]): void {
  const sums = new Map<Limiter, Map<string, number>>();
  for (const it of items) {
    let byKey = sums.get(it.limiter!);
    if (byKey === undefined) sums.set(it.limiter!, (byKey = new Map()));
    const sum = (byKey.get(it.key) ?? 0) + it.cost;
    if (sum > MAX_AMOUNT) throw new BadRequest(`descriptors[${it.index}].hits_addend`, `makes ${sum} hits on one limit and client in this request; at most ${MAX_AMOUNT} are accepted`);
    byKey.set(it.key, sum);
  }
}
