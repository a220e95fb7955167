/**
 * plan — what an RLS request asks, before anything is decided: the request normalised (request.ts), then
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
import { BadRequest, duration, type RlsRateLimit, type RlsRequest, type RlsStatus } from './rls.js';
import { keyTooLong, normalise } from './request.js';
import type { Runtime } from './runtime.js';

/** Item — one descriptor matched to a limit. */
export interface Item {
  index: number;
  spec: LimitSpec;
  /** rt, limiter — the limit's runtime and limiter, found by the filter; undefined for unlimited and deny-all limits. */
  rt: Runtime | undefined;
  limiter: Limiter | undefined;
  /** key — the client's key in the limiter (Match.client); keyLength — its store key's length (Match.key, with the domain). */
  key: string;
  keyLength: number;
  cost: number;
  /** report — the limit's current_limit, made by the filter for the live items. */
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
 * plan — the request normalised, matched and filtered (see the file's comment). Throws BadRequest for a request it
 * cannot decide, before anything is charged or counted. `limits` — the configured limits' runtimes by LimitSpec id.
 */
export function plan(req: RlsRequest, cfg: ServiceConfig | undefined, limits: ReadonlyMap<string, Runtime>, overrides: Overrides, options: PlanOptions): Plan {
  const n = normalise(req);
  const { domain, descriptors, costs } = n;
  const statuses = new Array<RlsStatus>(descriptors.length);
  // match: each descriptor to its limit
  const matched: Item[] = [];
  let replacing: Set<string> | undefined;
  let guards: Guard[] | undefined;
  if (cfg !== undefined && cfg.hasDomain(domain)) {
    for (let i = 0; i < descriptors.length; i++) {
      const entries = descriptors[i].entries ?? [];
      const o = n.overrides[i];
      let m: Match | undefined;
      if (o !== undefined) {
        m = cfg.override(domain, entries, o);
        const base = m === undefined ? undefined : cfg.match(domain, entries);
        const brt = base === undefined || base.limit.unlimited || base.limit.denyAll ? undefined : limits.get(base.limit.id);
        if (brt !== undefined && base !== undefined) (guards ??= []).push({ index: i, limiter: brt.limiter, key: base.client });
      } else {
        m = cfg.match(domain, entries);
      }
      if (m === undefined) continue;
      const spec = m.limit;
      if (spec.replaces.length > 0) for (const r of spec.replaces) (replacing ??= new Set()).add(r);
      // a metric key other than the config path holds request values (a config path never does)
      matched.push({ index: i, spec, rt: undefined, limiter: undefined, key: m.client, keyLength: m.key.length, cost: costs[i], report: undefined, metricKey: m.metricKey, fromRequest: m.metricKey !== spec.path, own: o !== undefined });
    }
  }
  for (let i = 0; i < statuses.length; i++) statuses[i] = NO_LIMIT;
  // filter: what is answered without a decision; the rest is live
  const live: Item[] = [];
  let refused = false;
  let denied = 0;
  /** total — the live items' summed cost: past MAX_AMOUNT, some state may be asked for more than a cost can be. */
  let total = 0;
  for (const it of matched) {
    const spec = it.spec;
    if (spec.unlimited) {
      statuses[it.index] = UNLIMITED;
      continue;
    }
    if (spec.denyAll) {
      statuses[it.index] = denyStatus(it, replacing, options);
      if (it.cost > 0 && statuses[it.index].code === 'OVER_LIMIT') refused = true;
      if (it.cost > 0 && !replaced(spec, replacing)) denied++;
      continue;
    }
    const rt = it.own ? overrides.runtime(spec, it.index) : limits.get(spec.id);
    if (rt === undefined) continue;
    // escaping (`%XX`) can lengthen a key under the cap as sent past it
    if (it.keyLength > MAX_KEY_LENGTH) throw keyTooLong(it.index, it.keyLength);
    it.rt = rt;
    it.limiter = rt.limiter;
    total += it.cost;
    if (replaced(spec, replacing)) continue;
    it.report = currentLimitOf(spec);
    live.push(it);
  }
  if (total > MAX_AMOUNT) checkTotals(matched);
  const metrics = options.metrics;
  if (metrics !== undefined && denied > 0) {
    for (const it of matched) {
      if (!it.spec.denyAll || it.cost === 0 || replaced(it.spec, replacing)) continue;
      metrics.refused(domain, it.metricKey, it.spec.name ?? denyRuleName(it.spec), it.cost, it.spec.shadowMode || options.shadowMode === true, it.fromRequest);
    }
  }
  return { domain, statuses, live, refused, guards };
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
 * (OK in shadow mode), or OK when another limit of the request replaces it.
 */
function denyStatus(it: Item, replacing: Set<string> | undefined, options: PlanOptions): RlsStatus {
  const spec = it.spec;
  if (it.cost === 0) return { code: 'OK', current_limit: currentLimitOf(spec), limit_remaining: 0, duration_until_reset: duration(windowLeft(spec.report?.unit, options.clock?.now() ?? Date.now())) };
  if (replaced(spec, replacing)) return NO_LIMIT;
  const shadow = spec.shadowMode || options.shadowMode === true;
  return { code: shadow ? 'OK' : 'OVER_LIMIT', current_limit: currentLimitOf(spec), limit_remaining: 0, duration_until_reset: duration(windowLeft(spec.report?.unit, options.clock?.now() ?? Date.now())) };
}

/** currentLimitOf — how a limit appears as current_limit: its report (the first rule's rate per unit) and name. */
export function currentLimitOf(spec: LimitSpec): RlsRateLimit {
  const r = spec.report;
  const out: RlsRateLimit = { requests_per_unit: r?.requestsPerUnit ?? Math.floor(spec.rules[0].limit), unit: r?.unit ?? 'UNKNOWN' };
  if (spec.name !== undefined) out.name = spec.name;
  return out;
}

/** denyRuleName — the rule label of an unnamed requests_per_unit: 0 limit: `0/1m` (or `0` without a unit). */
function denyRuleName(spec: LimitSpec): string {
  const unit = spec.report?.unit;
  return unit === undefined || unit === 'UNKNOWN' ? '0' : `0/${formatDuration(UNIT_MS[unit])}`;
}

/**
 * checkTotals — throws a BadRequest naming the descriptor at which one state (a limiter and a key: duplicate
 * descriptors are one request of their summed cost) is asked for more than MAX_AMOUNT, before anything is charged.
 * Reads the items a limiter was found for (replaced ones too, as they are charged nothing but were counted so).
 */
function checkTotals(items: readonly Item[]): void {
  const sums = new Map<Limiter, Map<string, number>>();
  for (const it of items) {
    if (it.limiter === undefined) continue;
    let byKey = sums.get(it.limiter);
    if (byKey === undefined) sums.set(it.limiter, (byKey = new Map()));
    const sum = (byKey.get(it.key) ?? 0) + it.cost;
    if (sum > MAX_AMOUNT) throw new BadRequest(`descriptors[${it.index}].hits_addend`, `makes ${sum} hits on one limit and client in this request; at most ${MAX_AMOUNT} are accepted`);
    byKey.set(it.key, sum);
  }
}
