import { toCsv, type Cell } from './csv.js';
import type { ReplayResult } from './replay.js';

/**
 * CSV_HEADER — the columns of a replay's CSV: one row per request per limiter (`kind` = request), one per grid
 * sample per rate rule and key (`kind` = estimate: the estimate a request at that instant would be judged by) and
 * one right after each request (`kind` = estimate-after: the top of the jump the request made). Times in seconds
 * on the trace's clock; `rate` is per second: the decision's rate for a request (earrrl: the estimate before it),
 * the peeked estimate otherwise.
 */
export const CSV_HEADER = [
  'limiter', 'kind', 't', 'key', 'rule', 'sent', 'admitted', 'reason', 'rate', 'retry_after_s', 'cum_sent', 'cum_admitted',
] as const;

/** resultCsv — a replay as CSV text: requests then estimates, each in time order per limiter. */
export function resultCsv(result: ReplayResult): string {
  return toCsv(CSV_HEADER, rows(result));
}

function* rows(result: ReplayResult): Generator<Cell[]> {
  for (const r of result.requests) {
    yield [r.limiter, 'request', r.t / 1000, r.key, undefined, r.sent, r.admitted, r.reason, r.rate, r.retryAfter === Infinity ? 'Infinity' : r.retryAfter / 1000, r.cumSent, r.cumAdmitted];
  }
  for (const e of result.estimates) {
    yield [e.limiter, e.after ? 'estimate-after' : 'estimate', e.t / 1000, e.key, e.rule, undefined, undefined, undefined, e.rate, undefined, undefined, undefined];
  }
}
