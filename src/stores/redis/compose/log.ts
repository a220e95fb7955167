import type { RuleConfig } from '../../../core/algorithms/common.js';
import { enoughFor } from '../../../core/algorithms/slidingLog.js';
import { constantVars, type LogShape } from './rule.js';
import { indent, render } from './template.js';

/**
 * log — the shared sliding log's part of a policy's body (slidingLog.lua), for a policy with slidingLog rules: how
 * the value's head is read, the log's header decoded, the filed request charged, given back and stored. The log's
 * value layout: the state ($STATE_BYTES), the header (36 bytes) and the buffer, of which the script reads the head.
 */

/** LOG_HEAD_ENTRIES — the entries of a sliding log the script reads with the head of the value (a log that short is read whole, in one GETRANGE). */
const LOG_HEAD_ENTRIES = 64;

/** logShape — what the shared log of these rules must keep: the longest period, and the largest limit with its tolerance. */
export function logShape(rules: readonly RuleConfig[]): LogShape {
  const logRules = rules.filter((r) => r.algorithm === 'slidingLog');
  return { per: Math.max(0, ...logRules.map((r) => r.per)), limit: enoughFor(logRules.map((r) => r.limit)) };
}

/**
 * LogCode — the log's lines of the body: `fetch` (reads the head), `reread`, `whole`, `unwrap` (while an override's
 * header is read and dropped), `head` (decodes the log's header), `charge` (files the request, in the charge block),
 * `refund` (gives back a charge; none unless the script refunds), `store` and `storeLive` (write it back); the
 * value's head as packed and read (`stateHead`, `headBytes`: the local-first sync stores a rebuilt log at once).
 */
export interface LogCode {
  readonly fetch: string;
  readonly reread: string;
  readonly whole: string;
  readonly unwrap: string;
  readonly head: string;
  readonly charge: readonly string[];
  readonly refund: readonly string[];
  readonly store: string;
  readonly storeLive: string;
  /** stateHead — the value's head as packed ('n', the state, the log's header); headBytes — the bytes of a value the script reads first. */
  readonly stateHead: string;
  readonly headBytes: number;
}

/**
 * logCode — the log's lines for a policy whose rules' state is `state` (s1 …) and whose first slidingLog rule is
 * `first` (its accounting is the log's: one for all its rules); `refunds` — the script gives back charges.
 */
export function logCode(rules: readonly RuleConfig[], state: readonly string[], refunds: boolean): LogCode {
  const first = rules.find((r) => r.algorithm === 'slidingLog') as RuleConfig;
  const strict = first.accounting === 'strict';
  const bytes = state.length * 8;
  const head = 1 + bytes + 36 + LOG_HEAD_ENTRIES * 16;
  const header = [...state, 'lbase', 'lnewest', 'ltotal', 'loff', 'ln', 'lcap'].join(', ');
  const d = 'd'.repeat(state.length);
  const vars = {
    ...constantVars(first, logShape(rules)),
    HEAD: String(head), HEAD_LAST: String(head - 1), FIXED: String(1 + bytes + 36 + 10), STATE_BYTES: String(bytes),
    STATE_HEAD: `pack('<c1${d}dddI4I4I4', 'n', ${header})`,
    STATE_BODY_HEAD: `pack('<${d}dddI4I4I4', ${header})`,
  };
  const refund = refunds ? indent(render('slidingLog', 'refund', vars)) : '';
  return {
    fetch: render('slidingLog', 'fetch', vars),
    reread: render('slidingLog', 'reread', vars),
    whole: render('slidingLog', 'whole', vars),
    unwrap: render('slidingLog', 'unwrap', vars),
    head: render('slidingLog', 'head', vars),
    charge: [strict ? '  do' : '  if admitted then', indent(indent(render('slidingLog', 'charge', vars))), '    changed = true', '  end'],
    refund: refunds ? ['-- the shared sliding log', ...(strict ? ['if not leakyOnly then', refund, 'end'] : ['do', refund, 'end'])] : [],
    store: render('slidingLog', 'store', vars),
    storeLive: render('slidingLog', 'store_live', vars),
    stateHead: vars.STATE_HEAD,
    headBytes: head,
  };
}
