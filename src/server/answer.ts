/**
 * answer — an RLS response from a plan and its live descriptors' decisions: each descriptor's status (code,
 * current_limit, limit_remaining, duration_until_reset), the overall code, an operator's block or exemption of a
 * guarded client, the metrics of each decision, and the IETF RateLimit fields when the service adds them.
 */
import type { Decision } from '../core/types.js';
import { seconds } from '../http/headers.js';
import { MAX_UINT32 } from './envoy.js';
import type { Metrics } from './metrics.js';
import type { Item, Plan } from './plan.js';
import { duration, type RlsResponse, type RlsStatus } from './rls.js';

/** AnswerOptions — the service's options an answer reads. */
export interface AnswerOptions {
  responseHeaders?: boolean;
  shadowMode?: boolean;
  metrics?: Metrics;
}

/**
 * OVERRIDE_RULE — the rule label of a request's own limit in the metrics: its rule's name (`9/1h`) holds the
 * client's requests_per_unit, and a label must not (every value would be a new series).
 */
const OVERRIDE_RULE = 'request_limit';

/** finish — the response from the plan and the live descriptors' decisions (then the guards', in plan order). */
export function finish(plan: Plan, decisions: Decision[], options: AnswerOptions): RlsResponse {
  const { statuses, live } = plan;
  let overall: RlsResponse['overall_code'] = plan.refused ? 'OVER_LIMIT' : 'OK';
  for (let j = 0; j < live.length; j++) {
    const it = live[j];
    const dec = decisions[j];
    if (plan.refused) {
      statuses[it.index] = { code: 'OK', current_limit: it.report, limit_remaining: remainingOf(dec), duration_until_reset: duration(dec.resetAfter) };
      continue;
    }
    const over = !dec.allowed;
    if (over) overall = 'OVER_LIMIT';
    statuses[it.index] = {
      code: over ? 'OVER_LIMIT' : 'OK',
      current_limit: it.report,
      limit_remaining: over ? 0 : remainingOf(dec),
      duration_until_reset: duration(over ? finite(dec.retryAfter, dec.resetAfter) : dec.resetAfter),
    };
    options.metrics?.decision(plan.domain, it.metricKey, dec, it.cost, it.own ? OVERRIDE_RULE : undefined, it.fromRequest);
  }
  if (plan.guards !== undefined) {
    // the configured limit's block or exemption of the client decides its descriptor, whatever limit it carried
    for (let j = 0; j < plan.guards.length; j++) {
      const g = plan.guards[j];
      const dec = decisions[live.length + j];
      if (dec === undefined || (dec.reason !== 'blocked' && dec.reason !== 'exempt')) continue;
      const prev = statuses[g.index];
      statuses[g.index] = dec.reason === 'blocked'
        ? { code: 'OVER_LIMIT', current_limit: prev?.current_limit, limit_remaining: 0, duration_until_reset: prev?.duration_until_reset }
        : { code: 'OK', current_limit: prev?.current_limit, limit_remaining: prev?.limit_remaining ?? 0, duration_until_reset: prev?.duration_until_reset };
    }
    overall = 'OK';
    for (const st of statuses) if (st !== undefined && st.code === 'OVER_LIMIT') overall = 'OVER_LIMIT';
  }
  const response: RlsResponse = { overall_code: overall, statuses, response_headers_to_add: NO_HEADERS };
  if (options.responseHeaders === true) {
    if (plan.refused) response.response_headers_to_add = deniedHeaders(statuses);
    else if (live.length > 0) response.response_headers_to_add = headersFor(live, plan.guards === undefined ? decisions : decisions.slice(0, live.length), options.shadowMode === true);
  }
  return response;
}

/** NO_HEADERS — the headers of an answer without RateLimit fields: one frozen empty list shared by every such answer. */
const NO_HEADERS = Object.freeze([]) as unknown as RlsResponse['response_headers_to_add'];

/** remainingOf — a decision's remaining as limit_remaining: whole, 0 to MAX_UINT32. */
function remainingOf(d: Decision): number {
  return Math.min(MAX_UINT32, Math.max(0, Math.floor(d.remaining)));
}

/** finite — `ms` when finite, else `otherwise` when finite, else 0 (a duration_until_reset is never infinite). */
function finite(ms: number, otherwise: number): number {
  return ms < Infinity ? ms : otherwise < Infinity ? otherwise : 0;
}

/** deniedHeaders — a request refused by a requests_per_unit: 0 limit: Retry-After until that limit's window ends. */
function deniedHeaders(statuses: RlsStatus[]): RlsResponse['response_headers_to_add'] {
  let wait = 0;
  for (const st of statuses) {
    if (st?.code !== 'OVER_LIMIT' || st.duration_until_reset === undefined) continue;
    wait = Math.max(wait, st.duration_until_reset.seconds * 1000 + st.duration_until_reset.nanos / 1e6);
  }
  const s = seconds(wait);
  return s === undefined || s === 0 ? [] : [{ key: 'Retry-After', value: String(s) }];
}

/**
 * headersFor — the IETF fields for the binding descriptor: when refused, the refusing one with the longest wait;
 * when admitted, the one with the least remaining. Retry-After with a refusal. A limit in shadow mode (its own
 * `shadow_mode`, or `shadow` for the whole service) refuses nothing, so it never binds: with no enforced limit there
 * are no fields.
 */
function headersFor(items: Item[], decisions: Decision[], shadow: boolean): RlsResponse['response_headers_to_add'] {
  if (shadow) return [];
  let bind = -1;
  const refused = decisions.some((d) => !d.allowed);
  for (let j = 0; j < decisions.length; j++) {
    const d = decisions[j];
    if (items[j].spec.shadowMode) continue;
    if (refused ? !d.allowed && (bind < 0 || d.retryAfter > decisions[bind].retryAfter) : bind < 0 || d.remaining < decisions[bind].remaining) bind = j;
  }
  if (bind < 0) return [];
  const d = decisions[bind];
  const rt = items[bind].rt!;
  const out = [
    { key: 'RateLimit-Policy', value: rt.policyField },
    { key: 'RateLimit', value: rt.writer.write(d) },
  ];
  if (refused) {
    const s = seconds(d.retryAfter);
    if (s !== undefined) out.push({ key: 'Retry-After', value: String(s) });
  }
  return out;
}
