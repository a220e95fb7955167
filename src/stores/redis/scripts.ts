import { createHash } from 'node:crypto';
import type { Policy } from '../../core/policy.js';
import { NEGLIGIBLE, REL_SLACK, TIME_SLACK } from '../../core/algorithms/common.js';
import { body } from './compose/body.js';
import { indent, lua, luaNumber, printable, render } from './compose/template.js';

/**
 * scripts — the Lua scripts the store runs, by SHA1: one straight-line script per policy for its check, refund and
 * compound check (written by the composer in compose/: template.ts fills the .lua templates, rule.ts, log.ts and
 * replyShape.ts write the rules', the log's and the reply's parts, body.ts the body), the small scripts of the
 * operators' commands (opScript), and the name of a policy's state layout in its keys (policyId).
 */

export { lua } from './compose/template.js';
export { hasDelay, hasRate, stateSizeOf } from './compose/rule.js';

/** Script — one Lua script and its SHA1, the name EVALSHA calls it by. */
export class Script {
  readonly sha: string;
  constructor(readonly text: string) {
    this.sha = createHash('sha1').update(text).digest('hex');
  }
}

/** LIBRARY — the library functions and constants a script may use, as the prelude declares them. */
const LIBRARY: Record<string, string> = {
  floor: 'math.floor', ceil: 'math.ceil', exp: 'math.exp', log: 'math.log', abs: 'math.abs', INF: 'math.huge',
  pack: 'struct.pack', unpack: 'struct.unpack', byte: 'string.byte', sub: 'string.sub',
};

/** finish — a script's text with its prelude: a local for each library function it calls (each one a global lookup per call otherwise). */
export function finish(title: string, code: string): Script {
  const uncommented = code.replace(/--[^\n]*/g, '');
  const prelude = Object.entries(LIBRARY).filter(([name]) => new RegExp(`\\b${name}\\b`).test(uncommented));
  return new Script(`${title}\nlocal ${prelude.map(([n]) => n).join(', ')} = ${prelude.map(([, v]) => v).join(', ')}\n${code}`);
}

/** describe — a policy's rules, for a script's first lines. */
const describe = (policy: Policy): string => policy.rules.map((r) => `${printable(r.name)} (${r.algorithm}, ${r.accounting})`).join('; ');

/** written — the first line of a script, saying what it does and where it comes from. */
const written = (what: string): string =>
  `-- ratekeeper: ${what}, written from src/stores/redis/lua/policy.lua and the rules' templates (KEYS, ARGV and reply: see policy.lua).`;

/** policyScript — the one straight-line check script of a policy (policy.lua's `check`, the body at top level). */
export function policyScript(policy: Policy): Script {
  return finish(`${written('the check of one policy')}\n-- The policy: ${describe(policy)}`, render('policy', 'check', { BODY: body(policy, 'check') }));
}

/** refundScript — gives back a charge of one client of a policy (policy.lua's `refund`), then reports as a check of cost 0. */
export function refundScript(policy: Policy): Script {
  return finish(`${written('the refund of one policy')}\n-- The policy: ${describe(policy)}`, render('policy', 'refund', { BODY: body(policy, 'refund') }));
}

/**
 * compoundScript — decides one client of each policy all-or-nothing (policy.lua's `compound`): each distinct
 * policy's body is one function (its own ≤ 200 locals), called per part through a table.
 */
export function compoundScript(policies: readonly Policy[]): Script {
  const index = new Map<Policy, number>();
  const fns: string[] = [];
  const titles: string[] = [];
  policies.forEach((p, i) => {
    const first = index.get(p);
    if (first !== undefined) {
      fns.push(`F[${i + 1}] = F[${first + 1}]`);
      return;
    }
    index.set(p, i);
    titles.push(`-- part ${i + 1}: ${describe(p)}${p.dryRun ? ' (dry-run)' : ''}`);
    fns.push(`F[${i + 1}] = function(key, cost, mode)`, indent(body(p, 'compound')), 'end');
  });
  return finish(`${written(`a compound check of ${policies.length} parts`)}\n${titles.join('\n')}`, render('policy', 'compound', { FUNCTIONS: fns.join('\n') }));
}

/** tolerances — the core's tolerances, as exact Lua literals, written before common.lua (the small scripts). */
const tolerances = (): string => `local REL_SLACK, TIME_SLACK, NEGLIGIBLE = ${luaNumber(REL_SLACK)}, ${luaNumber(TIME_SLACK)}, ${luaNumber(NEGLIGIBLE)}`;

/**
 * opScript — one of the small scripts (override, unoverride, reset, refile): common.lua, record.lua, deadline.lua (which takes
 * the deadline off the front of ARGV, so the file reads its own ARGV as documented) and the file.
 */
export const opScript = (name: 'override' | 'unoverride' | 'reset' | 'refile'): Script => new Script([tolerances(), lua('common'), lua('record'), lua('deadline'), lua(name)].join('\n'));

/**
 * policyId — names a policy's state layout in its keys, so that limiters with different policies on one Redis
 * never read each other's state (and a limiter never reads a layout it does not know).
 */
export function policyId(policy: Policy): string {
  if (policy.id !== undefined) {
    // a policy with an id: named by the id and the state's layout only (algorithm and per of each rule, in order), so
    // that policies of that id with other limits, bursts, half-lives or accounting read and write one state per client;
    // every number they store means the same whatever those (gcra keeps its interval beside its TAT: stateSizeOf)
    const layout = policy.rules.map((r) => [r.algorithm, r.per]);
    return createHash('sha1').update(JSON.stringify(['ratekeeper-redis-shared-1', policy.id, layout])).digest('base64url').slice(0, 8);
  }
  const shape = policy.rules.map((r) => [r.algorithm, r.limit, r.per, r.burst, r.halfLife, r.accounting]);
  // -2: the sliding log's layout with a header and an in-place buffer (slidingLog.lua); -3: one number, which may be
  // compact (policy.lua); the others -1
  const version = policy.rules.some((r) => r.algorithm === 'slidingLog') ? 'ratekeeper-redis-2' : policy.stateSize === 1 ? 'ratekeeper-redis-3' : 'ratekeeper-redis-1';
  // 8 characters (48 bits): a short key name fits a smaller allocation (docs/redis.md, memory per tracked client)
  return createHash('sha1').update(JSON.stringify([version, shape])).digest('base64url').slice(0, 8);
}
