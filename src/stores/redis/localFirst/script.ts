/**
 * localFirst/script — the sync script of one policy (lua/localFirst.lua): its rules' own templates (compose/rule.ts,
 * the same code the check script runs) applying an instance's charges to several clients, and where each number of
 * Policy's layout sits in the state the script returns (a shared policy's gcra rule keeps its interval beside its TAT
 * in Redis, not in Policy's layout).
 */
import type { Policy } from '../../../core/policy.js';
import { Script } from '../scripts.js';
import { ruleCode, type RuleCode } from '../compose/rule.js';
import { printable, render } from '../compose/template.js';

/** SyncScript — a policy's sync script, the size of the state it returns, and where Policy's numbers are in it. */
export interface SyncScript {
  readonly script: Script;
  /** redisSize — numbers of state per client in Redis (Policy's, plus a shared gcra rule's interval). */
  readonly redisSize: number;
  /** pick — for each number of Policy's layout, its index in the returned state. */
  readonly pick: Int32Array;
}

/** LIBRARY — the library functions the sync script uses (a local each: a global lookup per call otherwise). */
const PRELUDE = 'local floor, ceil, exp, log, abs, INF, pack, unpack, byte, sub = math.floor, math.ceil, math.exp, math.log, math.abs, math.huge, struct.pack, struct.unpack, string.byte, string.sub';

/**
 * syncScript — the sync script of `policy` (a policy without slidingLog rules: their log is not replayed here). Its
 * state is read and written exactly as the policy's check script reads and writes it (policy.lua's `fetch`,
 * `fetch_compact`, `load`, `store`), so the exact mode and this mode share one state per client.
 */
export function syncScript(policy: Policy): SyncScript {
  const rules = policy.rules;
  if (policy.hasLog) throw new Error('ratekeeper/redis: the local-first sync does not replay a sliding log');
  const shared = policy.id !== undefined;
  const codes: RuleCode[] = [];
  const pick: number[] = [];
  let offset = 0;
  for (const r of rules) {
    const code = ruleCode(r, codes.length + 1, offset, shared, false, { per: 0, limit: 0 });
    // Policy's numbers of this rule are the first of its Redis numbers (gcra's interval, when shared, comes after)
    const own = r.algorithm === 'gcra' ? 1 : code.state.length;
    for (let k = 0; k < own; k++) pick.push(offset + k);
    offset += code.state.length;
    codes.push(code);
  }
  if (pick.length !== policy.stateSize) throw new Error(`ratekeeper/redis: local-first layout ${pick.length} differs from the policy's ${policy.stateSize}`);
  const state = codes.flatMap((c) => c.state);
  const d = 'd'.repeat(state.length);
  const values = {
    STATE: state.join(', '), STATE_BYTES: String(state.length * 8), STATE_FMT: `<${d}`, ZEROS: state.map(() => '0').join(', '),
    STATE_VALUE: `pack('<c1${d}', 'n', ${state.join(', ')})`,
  };
  const compact = state.length === 1;
  const locals = codes.flatMap((c) => [...c.locals, `rem${c.i}`, `wait${c.i}`, `reset${c.i}`]);
  const assign = (c: RuleCode): string => `${c.state.join(', ')} = ${c.next.join(', ')}`;
  const strict = codes.filter((c) => c.config.accounting === 'strict');
  const body = render('localFirst', 'body', {
    ...values,
    FETCH: render('policy', compact ? 'fetch_compact' : 'fetch', values),
    LOCALS: ['local fresh = 0', ...chunk(locals).map((c) => `local ${c.join(', ')}`), `local ${state.join(', ')}`],
    LOAD: render('policy', 'load', values),
    ADOPT: codes.flatMap((c) => c.adopt).join('\n'),
    DECIDE: codes.flatMap((c) => c.decide),
    CHARGE_ALL: codes.map(assign),
    CHARGE_STRICT: strict.length > 0 ? strict.map(assign) : ['-- (no strict rule: a refusal charges nothing)'],
    REPORT: codes.flatMap((c) => [`-- rule ${c.i}: ${printable(c.config.name)}`, 'do', c.report, `  if reset${c.i} > fresh then fresh = reset${c.i} end`, 'end']),
    STORE: [render('policy', 'store', values)],
    REPLY_FMT: `<dddd${d}`,
  });
  const title = `-- ratekeeper: the local-first sync of one policy, written from src/stores/redis/lua/localFirst.lua and the rules' templates (KEYS, ARGV and reply: see localFirst.lua).\n-- The policy: ${rules.map((r) => `${printable(r.name)} (${r.algorithm}, ${r.accounting})`).join('; ')}`;
  const text = `${title}\n${PRELUDE}\n${render('localFirst', 'sync', { BODY: [body] })}`;
  return { script: new Script(text), redisSize: state.length, pick: Int32Array.from(pick) };
}

/** chunk — a list in slices of 50 (one `local` statement per slice). */
function chunk<T>(list: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += 50) out.push(list.slice(i, i + 50));
  return out;
}
