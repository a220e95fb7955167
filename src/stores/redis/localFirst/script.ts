/**
 * localFirst/script — the sync script of one policy (lua/localFirst.lua): its rules' own templates (compose/rule.ts,
 * the same code the check script runs; the shared sliding log's from compose/log.ts) applying an instance's charges to several clients, and where each number of
 * Policy's layout sits in the state the script returns (a shared policy's gcra rule keeps its interval beside its TAT
 * in Redis, not in Policy's layout).
 */
import type { Policy } from '../../../core/policy.js';
import { Script } from '../scripts.js';
import { ruleCode, type RuleCode } from '../compose/rule.js';
import { logCode, logShape } from '../compose/log.js';
import { lit, printable, render } from '../compose/template.js';

/** SyncScript — a policy's sync script, the size of the state it returns, and where Policy's numbers are in it. */
export interface SyncScript {
  readonly script: Script;
  /** redisSize — numbers of state per client in Redis (Policy's, plus a shared gcra rule's interval). */
  readonly redisSize: number;
  /** pick — for each number of Policy's layout, its index in the returned state. */
  readonly pick: Int32Array;
  /** hasLog — the reply carries the shared sliding log after the state (base, count, entries). */
  readonly hasLog: boolean;
}

/**
 * LOG_COPY — the most entries of a sliding log the sync returns (16 bytes each: 16 KB). A longer log is returned merged
 * (localFirst.lua's `return_log`: only the entries that may leave a window while the copy decides, one by one); when
 * even those are more, none: its client is decided by the exact mode while that lasts.
 */
export const LOG_COPY = 1024;

/** LIBRARY — the library functions the sync script uses (a local each: a global lookup per call otherwise). */
const PRELUDE = 'local floor, ceil, exp, log, abs, INF, pack, unpack, byte, sub = math.floor, math.ceil, math.exp, math.log, math.abs, math.huge, struct.pack, struct.unpack, string.byte, string.sub';

/**
 * syncScript — the sync script of `policy`. Its state is read and written exactly as the policy's check script reads
 * and writes it (policy.lua's `fetch`, `fetch_compact`, `load`, `store`; with slidingLog rules slidingLog.lua's
 * `fetch`, `head`, `charge` and `store`, through compose/log.ts), so the exact mode and this mode share one state per
 * client.
 */
export function syncScript(policy: Policy): SyncScript {
  const rules = policy.rules;
  const shared = policy.id !== undefined;
  const shape = logShape(rules);
  const codes: RuleCode[] = [];
  const pick: number[] = [];
  let offset = 0;
  for (const r of rules) {
    const code = ruleCode(r, codes.length + 1, offset, shared, false, shape);
    // Policy's numbers of this rule are the first of its Redis numbers (gcra's interval, when shared, comes after)
    const own = r.algorithm === 'gcra' ? 1 : code.state.length;
    for (let k = 0; k < own; k++) pick.push(offset + k);
    offset += code.state.length;
    codes.push(code);
  }
  if (pick.length !== policy.stateSize) throw new Error(`ratekeeper/redis: local-first layout ${pick.length} differs from the policy's ${policy.stateSize}`);
  const state = codes.flatMap((c) => c.state);
  const log = policy.hasLog ? logCode(rules, state, false) : null;
  const d = 'd'.repeat(state.length);
  const values = {
    STATE: state.join(', '), STATE_BYTES: String(state.length * 8), STATE_FMT: `<${d}`, ZEROS: state.map(() => '0').join(', '),
    STATE_VALUE: `pack('<c1${d}', 'n', ${state.join(', ')})`,
  };
  const compact = state.length === 1 && log === null;
  const slices = codes.filter((c) => c.state.length > 0);
  const logs = codes.filter((c) => c.config.algorithm === 'slidingLog');
  // locals by scope (Lua 5.1: at most 200 active in a function): the slice rules' decide variables live in one
  // charge's block of the loop, each rule's report variables in its report's block; only the log rules' measures
  // (decided once before the reports) are the function's
  const loopLocals = slices.flatMap((c) => c.locals);
  const logLocals = logs.flatMap((c) => c.locals);
  const assign = (c: RuleCode): string => `${c.state.join(', ')} = ${c.next.join(', ')}`;
  const strict = slices.filter((c) => c.config.accounting === 'strict');
  const reply = `<dddd${d}${log ? 'dd' : ''}`;
  const body = render('localFirst', 'body', {
    ...values,
    FETCH: log ? log.fetch : render('policy', compact ? 'fetch_compact' : 'fetch', values),
    LOG_REREAD: log ? [log.reread] : [],
    LOG_UNWRAP: log ? [render('localFirst', 'log_unwrap', { LOG_WHOLE: [log.whole], LOG_UNWRAP_V: [log.unwrap] })] : [],
    LOCALS: ['local fresh = 0', ...chunk(logLocals).map((c) => `local ${c.join(', ')}`), ...(state.length > 0 ? [`local ${state.join(', ')}`] : [])],
    LOOP_LOCALS: chunk(loopLocals).map((c) => `local ${c.join(', ')}`),
    LOAD: state.length > 0 ? render('policy', 'load', values) : '',
    LOG_HEAD: log ? [log.head] : [],
    ADOPT: codes.flatMap((c) => c.adopt).join('\n'),
    // the slice rules decide each charge (their charged state n…); the log files it (log_charge) without a search
    DECIDE: slices.flatMap((c) => c.decide),
    CHARGE_ALL: slices.length > 0 ? slices.map(assign) : ['-- (no slice rule)'],
    CHARGE_STRICT: strict.length > 0 ? strict.map(assign) : ['-- (no strict rule: a refusal charges nothing)'],
    LOG_CHARGE: log ? [render('localFirst', 'log_charge', { CHARGE: log.charge, HEAD: String(log.headBytes), STATE_HEAD: log.stateHead, LE: String(2 + 8 * state.length + 36) })] : [],
    // the log's rules measure the log once, at the report's time (their report reads what decide found)
    LOG_DECIDE: log ? ['lcharged, ldrop = false, 0', ...logs.flatMap((c) => c.decide)] : [],
    REPORT: codes.flatMap((c) => [
      `-- rule ${c.i}: ${printable(c.config.name)}`, 'do', `  local rem${c.i}, wait${c.i}, reset${c.i}`, c.report, `  if reset${c.i} > fresh then fresh = reset${c.i} end`, 'end',
    ]),
    STORE: [log ? log.store : render('policy', 'store', values)],
    RETURN: [log
      ? render('localFirst', 'return_log', {
        REPLY_FMT: reply, STATE_ARGS: state.map((x) => `${x}, `).join(''), LOG_COPY: String(LOG_COPY),
        LOG_EDGES: [...new Set(logs.map((c) => c.config.per))].sort((x, y) => y - x).map((per) => render('localFirst', 'log_edge', { PER: lit(per), LOG_COPY: String(LOG_COPY) })),
      })
      : render('localFirst', 'return', { REPLY_FMT: reply, STATE: values.STATE })],
  });
  const title = `-- ratekeeper: the local-first sync of one policy, written from src/stores/redis/lua/localFirst.lua and the rules' templates (KEYS, ARGV and reply: see localFirst.lua).\n-- The policy: ${rules.map((r) => `${printable(r.name)} (${r.algorithm}, ${r.accounting})`).join('; ')}`;
  const text = `${title}\n${PRELUDE}\n${render('localFirst', 'sync', { BODY: [body] })}`;
  return { script: new Script(text), redisSize: state.length, pick: Int32Array.from(pick), hasLog: log !== null };
}

/** chunk — a list in slices of 50 (one `local` statement per slice). */
function chunk<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += 50) out.push(list.slice(i, i + 50));
  return out;
}
