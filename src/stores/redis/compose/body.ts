import type { Policy } from '../../../core/policy.js';
import { RatekeeperError } from '../../../core/errors.js';
import { logCode, logShape, type LogCode } from './log.js';
import { replyShape } from './replyShape.js';
import { ruleCode, type RuleCode } from './rule.js';
import { printable, render, type Vars } from './template.js';

/**
 * body — the straight-line code of one policy's check (policy.lua's `body` section), written from the templates of
 * the algorithms its rules use: every rule's parameters as exact literals, its state in numbered locals in Policy's
 * layout, no table, closure or loop over rules at run time. Each builder below writes one part of it: the state's
 * load and store, the all-or-nothing commit, the reports; the rules' own code is rule.ts's, the log's log.ts's, the
 * reply's shape replyShape.ts's.
 */

/**
 * Flavor — what the policy's body is written for: `check` (one check, at the top level of its script), `refund`
 * (gives back a charge, then reports as a check of cost 0), `compound` (a part of a compound script: a function of
 * (key, cost, mode) returning the reply and whether its decision is allowed; mode 1 returns only that verdict).
 */
export type Flavor = 'check' | 'refund' | 'compound';

/** body — the body of `policy` for `flavor` (dry-run, compound: the part never refuses). */
export function body(policy: Policy, flavor: Flavor): string {
  const rules = policy.rules;
  const shared = policy.id !== undefined;
  const refunds = flavor === 'refund';
  const shape = logShape(rules);
  const codes: RuleCode[] = [];
  let offset = 0;
  for (const r of rules) {
    const code = ruleCode(r, codes.length + 1, offset, shared, refunds, shape);
    offset += code.state.length;
    codes.push(code);
  }
  const state = codes.flatMap((c) => c.state);
  const expected = policy.stateSize + (shared ? rules.filter((r) => r.algorithm === 'gcra').length : 0);
  if (offset !== expected) throw new Error(`ratekeeper/redis: state layout ${offset} differs from the policy's ${expected}`);
  const reply = replyShape(codes);
  const locals = codes.flatMap((c, k) => [...c.locals, ...reply.locals[k]]);
  const log = rules.some((r) => r.algorithm === 'slidingLog') ? logCode(rules, state, refunds) : null;
  checkBudget(rules.length, state.length, locals.length, log !== null);
  // compact — one number of state and no log: stored as a small integer and the key's expiry (policy.lua)
  const compact = state.length === 1 && log === null;
  const dry = policy.dryRun;
  const values = stateValues(state);
  const vars: Vars = {
    ...values,
    FETCH: log ? log.fetch : render('policy', compact ? 'fetch_compact' : 'fetch', values),
    LOG_REREAD: log ? [log.reread] : [],
    LOG_WHOLE: log ? [log.whole] : [],
    LOG_UNWRAP: log ? [log.unwrap] : [],
    LOCALS: ['local fresh = 0', ...chunk(locals).map((c) => `local ${c.join(', ')}`), ...(state.length > 0 ? [`local ${state.join(', ')}`] : [])],
    LOAD: state.length > 0 ? render('policy', 'load', values) : '',
    LOG_HEAD: log ? [log.head] : [],
    ADOPT: codes.flatMap((c) => c.adopt).join('\n'),
    REFUND: refunds ? render('policy', 'give_back', { REFUNDS: [...codes.flatMap((c) => c.refund), ...(log ? log.refund : [])] }) : '',
    DECIDE: codes.flatMap((c) => c.decide),
    ALL_OK: codes.map((c) => `ok${c.i}`).join(' and '),
    VERDICT: flavor === 'compound' ? render('policy', dry ? 'verdict_dry' : 'verdict', {}) : '',
    ADMITTED: flavor === 'compound' ? 'allowed and mode == 2' : 'allowed',
    CHARGE: commit(codes, log),
    REPORT: codes.flatMap((c, k) => [
      `-- rule ${c.i}: ${printable(c.config.name)}`, 'do', ...reply.open[k], c.report, `  if reset${c.i} > fresh then fresh = reset${c.i} end`, ...reply.close[k], 'end',
    ]),
    STORE_LIVE: refunds ? (log ? log.storeLive : render('policy', 'store_live', values)) : '',
    LIVE_REPLY: reply.live,
    ADMIT_REPLY: reply.admit,
    REFUSE_REPLY: reply.refuse,
    RET: flavor === 'compound' ? (dry ? ', true' : ', allowed') : '',
    RET_LIVE: flavor === 'compound' ? (dry ? ', true' : ', okind == 3') : '',
    STORE: [log ? log.store : render('policy', compact ? 'store_compact' : 'store', values)],
  };
  return render('policy', 'body', vars);
}

/**
 * stateValues — the rules' state as policy.lua's placeholders: $STATE (s1, s2 …), $STATE_BYTES, $STATE_FMT, $ZEROS
 * (a fresh client's), $STATE_VALUE ('n' and the state, as stored), $STATE_BODY (the state after an override's header).
 */
function stateValues(state: readonly string[]): Record<string, string> {
  const d = 'd'.repeat(state.length);
  return {
    STATE: state.join(', '),
    STATE_BYTES: String(state.length * 8),
    STATE_FMT: `<${d}`,
    ZEROS: state.map(() => '0').join(', '),
    STATE_VALUE: state.length > 0 ? `pack('<c1${d}', 'n', ${state.join(', ')})` : `'n'`,
    STATE_BODY: state.length > 0 ? `pack('<${d}', ${state.join(', ')})` : `''`,
  };
}

/**
 * commit — the charge, all-or-nothing: every rule's charged state (n…) becomes its state (s…) when admitted, the
 * strict rules' when refused; the log files the request by its own accounting; nothing at cost 0 or under a live override.
 */
function commit(codes: readonly RuleCode[], log: LogCode | null): string[] {
  const assign = (c: RuleCode): string => `${c.state.join(', ')} = ${c.next.join(', ')}`;
  const all = codes.filter((c) => c.state.length > 0);
  const strict = all.filter((c) => c.config.accounting === 'strict');
  const lines = ['if cost > 0 and not live then'];
  if (all.length > 0) {
    lines.push('  if admitted then', ...all.map((c) => `    ${assign(c)}`), '    changed = true');
    if (strict.length > 0) lines.push('  else', ...strict.map((c) => `    ${assign(c)}`), '    changed = true');
    lines.push('  end');
  }
  if (log) lines.push(...log.charge);
  lines.push('end');
  return lines;
}

/**
 * checkBudget — Lua 5.1 compiles a function of at most 200 active locals and 250 registers. Besides the rules' locals
 * (and the log's 17) a script holds up to 46 more (the prelude, the clock, the override, the templates' nested blocks:
 * the most with exponential rules), and its widest expression (the state unpacked or packed at once, the reply's
 * parts) needs a register per operand on top of its locals — bounds measured on Redis (test/redis/script.test.ts
 * loads the largest policy accepted).
 */
function checkBudget(rules: number, state: number, locals: number, hasLog: boolean): void {
  const count = state + locals + (hasLog ? 17 : 0);
  if (count > 150 || count + Math.max(state, rules) > 212) {
    throw new RatekeeperError(`redisStore: a policy of ${rules} rules keeps too many numbers for one Redis script; split it into several limiters`);
  }
}

/** chunk — a list in slices of 50 (one `local` statement per slice). */
function chunk<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += 50) out.push(list.slice(i, i + 50));
  return out;
}
