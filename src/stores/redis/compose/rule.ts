import type { Algorithm } from '../../../core/types.js';
import type { RuleConfig } from '../../../core/algorithms/common.js';
import { TIME_SLACK } from '../../../core/algorithms/common.js';
import { constantsOf } from '../../../core/algorithms/constants.js';
import { DELAY, RATE, measureOf } from '../reply.js';
import { indent, lit, printable, render } from './template.js';

/**
 * rule — the code of one rule of a policy, from its algorithm's templates (gcra.lua …): its variables, its decide,
 * report and refund blocks and what it adds to the reply. Its constants are the core's (constantsOf: the very doubles
 * the class computes), written as literals.
 */

/**
 * stateSizeOf — numbers of state per client of an algorithm in Redis, as the core's rules keep them (slidingLog: in
 * the log); `shared` (a policy with an id): a gcra rule also keeps the interval its TAT was written under (ms per cost
 * unit), since TAT − now is used × T, the one stored number that depends on the rate (see gcra.lua's `adopt`).
 */
export function stateSizeOf(a: Algorithm, shared = false): number {
  switch (a) {
    case 'slidingLog': return 0;
    case 'gcra': return shared ? 2 : 1;
    case 'slidingWindow': return 3;
    default: return 2;
  }
}

/** hasRate, hasDelay — whether a rule's part of the reply carries a rate or a delay (the layout's measureOf, ../reply.ts). */
export const hasRate = (a: Algorithm): boolean => measureOf(a) === RATE;
export const hasDelay = (a: Algorithm): boolean => measureOf(a) === DELAY;

/** LogShape — what the shared sliding log must keep, for its rules' templates: the longest period (ms), the largest limit (cost units). */
export interface LogShape { per: number; limit: number }

/** upperSnake — a constant's name as its templates' placeholder: tolSlack → TOL_SLACK. */
const upperSnake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

/**
 * constantVars — a rule's parameters and derived numbers as its templates' literals: $LIMIT, $PER, $BURST,
 * $TIME_SLACK, each key of constantsOf (tolSlack → $TOL_SLACK); for a slidingLog rule also the log's $LOG_PER,
 * $LOG_LIMIT and $BACK (1 when its window is shorter than the log's: its searches start from the newest entry).
 */
export function constantVars(r: RuleConfig, log: LogShape): Record<string, string> {
  const vars: Record<string, string> = { LIMIT: lit(r.limit), PER: lit(r.per), BURST: lit(r.burst), TIME_SLACK: lit(TIME_SLACK) };
  for (const [k, x] of Object.entries(constantsOf(r))) vars[upperSnake(k)] = lit(x);
  if (r.algorithm === 'slidingLog') Object.assign(vars, { LOG_PER: lit(log.per), LOG_LIMIT: lit(log.limit), BACK: r.per < log.per ? '1' : '0' });
  return vars;
}

/**
 * RuleCode — one rule's part of a policy's body. `state`, `next` — its stored and charged state variables (s…, n…,
 * numbered in Policy's layout); `locals` — the variables it declares besides the reply's; `decide`, `adopt`,
 * `refund` — its blocks (lines; none when it has nothing to do); `report` — its report template filled, indented for
 * a do … end block; `values` — what it adds to the reply, in order; `title` — its comment line.
 */
export interface RuleCode {
  readonly i: number;
  readonly config: RuleConfig;
  readonly state: readonly string[];
  readonly next: readonly string[];
  readonly locals: readonly string[];
  readonly decide: readonly string[];
  readonly adopt: readonly string[];
  readonly refund: readonly string[];
  readonly report: string;
  readonly values: readonly string[];
  readonly title: string;
}

/**
 * ruleCode — the code of rule `i` (1-based) of a policy, its state from s`offset + 1` on. `shared` — the policy has
 * an id (gcra keeps its interval and adopts a TAT written under another); `refunds` — the script gives back charges.
 */
export function ruleCode(r: RuleConfig, i: number, offset: number, shared: boolean, refunds: boolean, log: LogShape): RuleCode {
  const size = stateSizeOf(r.algorithm, shared);
  const state = Array.from({ length: size }, (_, k) => `s${offset + k + 1}`);
  const next = Array.from({ length: size }, (_, k) => `n${offset + k + 1}`);
  const vars: Record<string, string> = {
    OK: `ok${i}`, REM: `rem${i}`, WAIT: `wait${i}`, RESET: `reset${i}`, RATE: `rate${i}`, DELAY: `delay${i}`, USED: `used${i}`, K: `lk${i}`,
    ...constantVars(r, log),
  };
  state.forEach((s, k) => { vars[`S${k + 1}`] = s; vars[`N${k + 1}`] = next[k]; });
  const a = r.algorithm;
  const title = `-- rule ${i}: ${printable(r.name)} (${a}, ${r.accounting})`;
  const locals = [...next, `ok${i}`];
  if (hasRate(a)) locals.push(`rate${i}`);
  if (hasDelay(a)) locals.push(`delay${i}`);
  if (a === 'slidingLog') locals.push(`used${i}`, `lk${i}`);
  const decide = [title, 'do', indent(render(a, 'decide', vars)), 'end'];
  let adopt: string[] = [];
  if (shared && a === 'gcra') {
    // gcra.lua's $N2: the interval the charged TAT is written under
    decide.push(`${next[1]} = ${vars.INTERVAL}`);
    adopt = [`-- rule ${i}: ${printable(r.name)} (gcra)`, render('gcra', 'adopt', vars)];
  }
  let refund: string[] = [];
  if (refunds && size > 0) {
    const code = indent(render(a, 'refund', vars));
    refund = [title, ...(r.accounting === 'strict' ? ['if not leakyOnly then', code, 'end'] : ['do', code, 'end'])];
  }
  const values = [`ok${i} and 1 or 0`, `rem${i}`, `wait${i}`, `reset${i}`];
  if (hasRate(a)) values.push(`rate${i}`);
  if (hasDelay(a)) values.push(`admitted and delay${i} or 0`);
  return { i, config: r, state, next, locals, decide, adopt, refund, report: indent(render(a, 'report', vars)), values, title };
}
