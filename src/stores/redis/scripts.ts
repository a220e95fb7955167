import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Policy } from '../../core/policy.js';
import type { Algorithm } from '../../core/types.js';
import type { RuleConfig } from '../../core/algorithms/common.js';
import { RatekeeperError } from '../../core/errors.js';
import { NEGLIGIBLE, REL_SLACK, TIME_SLACK, countSlack } from '../../core/algorithms/common.js';
import { enoughFor } from '../../core/algorithms/slidingLog.js';
import { DELAY, HEAD_DOUBLES, LIVE_TAIL_DOUBLES, RATE, TAIL_DOUBLES, measureOf } from './reply.js';

/**
 * LUA_DIR — where the .lua files are at run time: beside this file when it runs from source, else in src/ of the
 * package from dist/src/stores/redis/ (the repository and a published package both ship src/: package.json "files").
 */
const LUA_DIR = [new URL('./lua/', import.meta.url), new URL('../../../../src/stores/redis/lua/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((dir) => existsSync(`${dir}policy.lua`));

/** lua — the text of one .lua file, read once. */
const cache = new Map<string, string>();
export function lua(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    if (LUA_DIR === undefined) throw new Error('ratekeeper/redis: cannot find the lua/ folder (looked beside the module and in src/stores/redis/lua of the package)');
    text = readFileSync(`${LUA_DIR}${name}.lua`, 'utf8');
    cache.set(name, text);
  }
  return text;
}

/** tolerances — the core's tolerances, as exact Lua literals, written before common.lua (the small scripts). */
function tolerances(): string {
  return `local REL_SLACK, TIME_SLACK, NEGLIGIBLE = ${luaNumber(REL_SLACK)}, ${luaNumber(TIME_SLACK)}, ${luaNumber(NEGLIGIBLE)}`;
}

/** Script — one Lua script and its SHA1, the name EVALSHA calls it by. */
export class Script {
  readonly sha: string;
  constructor(readonly text: string) {
    this.sha = createHash('sha1').update(text).digest('hex');
  }
}

/** luaNumber — a JS number as a Lua literal that reads back as the same double (JS prints the shortest such text). */
function luaNumber(x: number): string {
  if (!Number.isFinite(x)) throw new Error(`ratekeeper/redis: cannot write ${x} into a script`);
  return String(x);
}

/**
 * Template — one .lua file of code templates: the header (its documentation) and its sections, each started by a
 * line `--@@ name`.
 */
const templates = new Map<string, Map<string, string>>();
function template(file: string): Map<string, string> {
  let t = templates.get(file);
  if (t === undefined) {
    t = new Map();
    const parts = lua(file).split(/^--@@ (\w+)[ \t]*$/m);
    for (let i = 1; i < parts.length; i += 2) t.set(parts[i], parts[i + 1].replace(/^\n+|\s+$/g, ''));
    templates.set(file, t);
  }
  return t;
}

/** arg — a macro argument as pasted: a name or a number as is, any other expression in parentheses. */
const arg = (a: string): string => (/^\$?[A-Za-z_][A-Za-z0-9_]*$|^[0-9.]+$/.test(a) ? a : `(${a})`);

/**
 * expand — section `name` of `file` with its macros expanded: `$1`, `$2` … are the macro's arguments; a line
 * `@include file.section` pastes another file's section, `@section(a, b)` or `@section` one of the same file.
 * Named placeholders ($NAME) are left for `fill`.
 */
function expand(file: string, name: string, args: string[] = []): string {
  const text = template(file).get(name);
  if (text === undefined) throw new Error(`ratekeeper/redis: ${file}.lua has no template ${name}`);
  const withArgs = text.replace(/\$([1-9])/g, (_, d: string) => {
    const a = args[Number(d) - 1];
    if (a === undefined) throw new Error(`ratekeeper/redis: ${file}.lua template ${name} needs argument $${d}`);
    return arg(a);
  });
  return withArgs.replace(/^([ \t]*)@(include )?([\w.]+)(?:\((.*)\))?[ \t]*$/gm, (_, indent: string, include: string | undefined, target: string, list: string | undefined) => {
    const [f, section] = include ? target.split('.') : [file, target];
    const inner = expand(f, section, list === undefined ? [] : list.split(',').map((x) => x.trim()));
    return inner.split('\n').map((l) => indent + l).join('\n');
  });
}

/** fill — replaces every $NAME in `text` by `vars[NAME]` (a name it does not know is a bug in a template: it throws). */
function fill(text: string, vars: Record<string, string>, where: string): string {
  return text.replace(/\$([A-Z][A-Z0-9_]*)/g, (_, n: string) => {
    const x = vars[n];
    if (x === undefined) throw new Error(`ratekeeper/redis: ${where} uses $${n}, which the composer does not define`);
    return x;
  });
}

/** lit — a number as a Lua literal, negative ones in parentheses (so that `a - $X` never reads as a comment). */
const lit = (x: number): string => (x < 0 || Object.is(x, -0) ? `(${luaNumber(x)})` : luaNumber(x));

/**
 * constants — a rule's parameters and the constants its template uses, computed with the very expressions of the
 * core's constructor (src/core/algorithms/*.ts), so that the literals are the same doubles the core compares with.
 */
function constants(r: RuleConfig, logPer: number, logLimit: number): Record<string, number> {
  const { limit, per, burst } = r;
  switch (r.algorithm) {
    case 'gcra': {
      const interval = per / limit;
      const tolerance = burst * interval;
      const slack = tolerance * REL_SLACK + TIME_SLACK;
      return { INTERVAL: interval, TOLERANCE: tolerance, SLACK: slack, TOL_SLACK: tolerance + slack, SLACK_I: slack / interval };
    }
    case 'fixedWindow': {
      const slack = countSlack(limit);
      return { LIMIT: limit, PER: per, SLACK: slack, LIM_SLACK: limit + slack };
    }
    case 'slidingWindow': {
      const slack = countSlack(limit);
      return { LIMIT: limit, PER: per, SLACK: slack, LIM_SLACK: limit + slack, TIME_SLACK };
    }
    case 'tokenBucket': case 'leakyBucket': {
      const perMs = limit / per;
      const slack = countSlack(burst) + perMs * TIME_SLACK;
      return { BURST: burst, PERMS: perMs, SLACK: slack, BURST_SLACK: burst + slack };
    }
    case 'earrrl': {
      const lambda = Math.LN2 / r.halfLife;
      const threshold = limit / per;
      const slack = threshold * (REL_SLACK + lambda * TIME_SLACK);
      return {
        LAMBDA: lambda, NEG_LAMBDA: -lambda, THRESHOLD: threshold, SLACK: slack, THR_SLACK: threshold + slack,
        THR_L: threshold / lambda, SLACK_L: slack / lambda, FLOOR: threshold * NEGLIGIBLE,
      };
    }
    case 'exponential': {
      const slack = countSlack(limit) + (limit * TIME_SLACK) / per;
      return { LIMIT: limit, PER: per, SLACK: slack, LIM_SLACK: limit + slack, FLOOR: limit * NEGLIGIBLE };
    }
    case 'slidingLog': {
      const slack = countSlack(limit);
      return { LIMIT: limit, PER: per, SLACK: slack, LIM_SLACK: limit + slack, LOG_PER: logPer, LOG_LIMIT: logLimit, BACK: per < logPer ? 1 : 0 };
    }
  }
}

/**
 * stateSizeOf — numbers of state per client of an algorithm in Redis, as the core's rules keep them (slidingLog: in
 * the log); `shared` (a policy with an id): a gcra rule also keeps the interval its TAT was written under (ms per cost
 * unit), since TAT − now is used × T, the one stored number that depends on the rate (see `adopt` in body()).
 */
export function stateSizeOf(a: Algorithm, shared = false): number {
  switch (a) {
    case 'slidingLog': return 0;
    case 'gcra': return shared ? 2 : 1;
    case 'slidingWindow': return 3;
    default: return 2;
  }
}

// ---- reply layout (reply.ts owns it; helper A's hunk: these two lines and REPLY_FMT / LIVE_FMT in body()) ----
/** hasRate, hasDelay — whether a rule's part of the reply carries a rate or a delay (reply.ts measureOf). */
export const hasRate = (a: Algorithm): boolean => measureOf(a) === RATE;
export const hasDelay = (a: Algorithm): boolean => measureOf(a) === DELAY;

/** LIBRARY — the library functions and constants a script may use, as the prelude declares them. */
const LIBRARY: Record<string, string> = {
  floor: 'math.floor', ceil: 'math.ceil', exp: 'math.exp', log: 'math.log', abs: 'math.abs', INF: 'math.huge',
  pack: 'struct.pack', unpack: 'struct.unpack', byte: 'string.byte', sub: 'string.sub',
};

/** FLAT_RULES — up to this many rules the reply is one struct.pack of locals; beyond, each rule packs its own part (Lua's 200 locals). */
const FLAT_RULES = 8;

/** LOG_HEAD_ENTRIES — the entries of a sliding log the script reads with the head of the value (a log that short is read whole, in one GETRANGE). */
const LOG_HEAD_ENTRIES = 64;

/**
 * Flavor — what the policy's body is written for: `check` (one check, at the top level of its script), `refund`
 * (gives back a charge, then reports as a check of cost 0), `compound` (a part of a compound script: a function of
 * (key, cost, mode) returning the reply and whether its decision is allowed; mode 1 returns only that verdict).
 */
type Flavor = 'check' | 'refund' | 'compound';

/**
 * body — the straight-line code of one policy's check (policy.lua's `body` section), written from the templates of
 * the algorithms its rules use: every rule's parameters as exact literals, its state in numbered locals in Policy's
 * layout, no table, closure or loop over rules at run time. `dry` — the policy is dry-run (compound: it never refuses).
 */
function body(policy: Policy, flavor: Flavor): string {
  const rules = policy.rules;
  const logRules = rules.filter((r) => r.algorithm === 'slidingLog');
  const hasLog = logRules.length > 0;
  const logPer = Math.max(0, ...logRules.map((r) => r.per));
  // what the newer entries must hold, more than, for an older one to be dropped: the largest limit and its tolerance
  const logLimit = enoughFor(logRules.map((r) => r.limit));
  const flat = rules.length <= FLAT_RULES;
  const locals: string[] = [];
  const state: string[] = [];
  const decide: string[] = [];
  const report: string[] = [];
  const replies: string[] = [];
  const chargeAll: string[] = [];
  const chargeStrict: string[] = [];
  const refund: string[] = [];
  // shared — the policy has an id: its keys are named by the layout, not the limits, so a value may have been written
  // under other limits (a rule change, another instance's rules); adopt — what converts it on reading (gcra only)
  const shared = policy.id !== undefined;
  const adopt: string[] = [];
  let offset = 0;
  rules.forEach((r, idx) => {
    const i = idx + 1;
    const size = stateSizeOf(r.algorithm, shared);
    const vars: Record<string, string> = {
      OK: `ok${i}`, REM: `rem${i}`, WAIT: `wait${i}`, RESET: `reset${i}`, RATE: `rate${i}`, DELAY: `delay${i}`, USED: `used${i}`, K: `lk${i}`,
    };
    for (const [k, x] of Object.entries(constants(r, logPer, logLimit))) vars[k] = lit(x);
    const s: string[] = [];
    const n: string[] = [];
    for (let k = 1; k <= size; k++) {
      vars[`S${k}`] = `s${offset + k}`;
      vars[`N${k}`] = `n${offset + k}`;
      s.push(`s${offset + k}`);
      n.push(`n${offset + k}`);
    }
    offset += size;
    state.push(...s);
    const where = `${r.algorithm}.lua (rule ${i})`;
    locals.push(...n, `ok${i}`);
    if (hasRate(r.algorithm)) locals.push(`rate${i}`);
    if (hasDelay(r.algorithm)) locals.push(`delay${i}`);
    if (r.algorithm === 'slidingLog') locals.push(`used${i}`, `lk${i}`);
    decide.push(`-- rule ${i}: ${printable(r.name)} (${r.algorithm}, ${r.accounting})`, 'do', indent(fill(expand(r.algorithm, 'decide'), vars, where)), 'end');
    if (shared && r.algorithm === 'gcra') {
      decide.push(`${n[1]} = ${vars.INTERVAL}`);
      adopt.push(`-- rule ${i}: ${printable(r.name)} (gcra)`, fill(expand('gcra', 'adopt'), vars, where));
    }
    if (size > 0) {
      chargeAll.push(`${s.join(', ')} = ${n.join(', ')}`);
      if (r.accounting === 'strict') chargeStrict.push(`${s.join(', ')} = ${n.join(', ')}`);
      if (flavor === 'refund') {
        const code = indent(fill(expand(r.algorithm, 'refund'), vars, where));
        refund.push(`-- rule ${i}: ${printable(r.name)} (${r.algorithm}, ${r.accounting})`, ...(r.accounting === 'strict' ? ['if not leakyOnly then', code, 'end'] : ['do', code, 'end']));
      }
    }
    const values = [`ok${i} and 1 or 0`, `rem${i}`, `wait${i}`, `reset${i}`];
    if (hasRate(r.algorithm)) values.push(`rate${i}`);
    if (hasDelay(r.algorithm)) values.push(`admitted and delay${i} or 0`);
    const body = [indent(fill(expand(r.algorithm, 'report'), vars, where)), `  if reset${i} > fresh then fresh = reset${i} end`];
    if (flat) {
      locals.push(`rem${i}`, `wait${i}`, `reset${i}`);
      report.push(`-- rule ${i}: ${printable(r.name)}`, 'do', ...body, 'end');
      replies.push(...values);
    } else {
      locals.push(`p${i}`);
      report.push(`-- rule ${i}: ${printable(r.name)}`, 'do', `  local rem${i}, wait${i}, reset${i}`, ...body, `  p${i} = pack('<${'d'.repeat(values.length)}', ${values.join(', ')})`, 'end');
      replies.push(`p${i}`);
    }
  });
  const expected = policy.stateSize + (shared ? rules.filter((r) => r.algorithm === 'gcra').length : 0);
  if (offset !== expected) throw new Error(`ratekeeper/redis: state layout ${offset} differs from the policy's ${expected}`);
  // Lua 5.1 compiles a function of at most 200 active locals and 250 registers. Besides the rules' locals (and the
  // log's 17) a script holds up to 46 more (the prelude, the clock, the override, the templates' nested blocks: the
  // most with exponential rules), and its widest expression (the state unpacked or packed at once, the reply's parts)
  // needs a register per operand on top of its locals — bounds measured on Redis (test/redis/script.test.ts loads the
  // largest policy accepted)
  const count = state.length + locals.length + (hasLog ? 17 : 0);
  if (count > 150 || count + Math.max(state.length, rules.length) > 212) {
    throw new RatekeeperError(`redisStore: a policy of ${rules.length} rules keeps too many numbers for one Redis script; split it into several limiters`);
  }
  // compact — one number of state and no log: stored as a small integer and the key's expiry (policy.lua)
  const compact = state.length === 1 && !hasLog;
  const logStrict = logRules[0]?.accounting === 'strict';
  // the log's value layout (slidingLog.lua): the head read first, the bytes besides the buffer, the head as packed
  const stateBytes = state.length * 8;
  const head = 1 + stateBytes + 36 + LOG_HEAD_ENTRIES * 16;
  const logVars: Record<string, string> = {
    HEAD: String(head), FIXED: String(1 + stateBytes + 36 + 10),
    STATE_HEAD: `pack('<c1${'d'.repeat(state.length)}dddI4I4I4', 'n', ${[...state, 'lbase', 'lnewest', 'ltotal', 'loff', 'ln', 'lcap'].join(', ')})`,
    STATE_BODY_HEAD: `pack('<${'d'.repeat(state.length)}dddI4I4I4', ${[...state, 'lbase', 'lnewest', 'ltotal', 'loff', 'ln', 'lcap'].join(', ')})`,
  };
  if (flavor === 'refund' && hasLog) {
    const code = indent(fill(expand('slidingLog', 'refund'), { ...constantVars(logRules[0], logPer, logLimit), ...logVars }, 'slidingLog.lua (refund)'));
    refund.push('-- the shared sliding log', ...(logStrict ? ['if not leakyOnly then', code, 'end'] : ['do', code, 'end']));
  }

  const charge: string[] = [];
  const logCharge = hasLog ? fill(expand('slidingLog', 'charge'), { ...constantVars(logRules[0], logPer, logLimit), ...logVars }, 'slidingLog.lua (charge)') : '';
  charge.push('if cost > 0 and not live then');
  if (chargeAll.length > 0) {
    charge.push('  if admitted then', ...chargeAll.map((l) => `    ${l}`), '    changed = true');
    if (chargeStrict.length > 0) charge.push('  else', ...chargeStrict.map((l) => `    ${l}`), '    changed = true');
    charge.push('  end');
  }
  if (hasLog) {
    charge.push(logStrict ? '  do' : '  if admitted then', indent(indent(logCharge)), '    changed = true', '  end');
  }
  charge.push('end');

  const dry = policy.dryRun;
  const fmt = (k: number): string => (flat ? `<${'d'.repeat(k)}` : '');
  const replyCount = flat ? replies.length : 0;
  const lines = (template('policy').get('body') as string).split('\n').flatMap((line): string[] => {
    if (line.startsWith('@log ')) {
      if (!hasLog) return [];
      line = line.slice(5);
    }
    const m = /^([ \t]*)@(\w+)(?:\((.*)\))?$/.exec(line);
    if (m === null) return [line];
    const [, pad, what, list] = m;
    const block = ((): string[] => {
      switch (what) {
        case 'decide': return decide;
        case 'adopt': return adopt;
        case 'charge': return charge;
        case 'report': return report;
        case 'read': return [expand('slidingLog', 'read', list.split(',').map((x) => x.trim()))];
        case 'refund':
          // the rules' refunds where there is state to give back; then the body goes on as a check of cost 0
          return flavor === 'refund' ? ['if v and #v >= at then', ...refund.map((l) => `  ${l}`), '  changed = true', 'end', 'cost = 0'] : [];
        case 'verdict':
          return flavor === 'compound' ? [`if mode == 1 then${dry ? ' return true' : ' if live then return okind == 3 end return allowed'} end`] : [];
        case 'store_live':
          return flavor === 'refund' ? [hasLog ? fill(expand('slidingLog', 'store_live'), logVars, 'slidingLog.lua (store_live)') : expand('policy', 'store_live')] : [];
        case 'fetch':
          if (hasLog) return [`local v = redis.call('GETRANGE', key, 0, ${head - 1})`, `local whole = #v < ${head}`, `if v == '' then v = false end`];
          // the compact form (policy.lua): the number is the key's expiry less j/4096 ms
          if (compact) return [`local v = redis.call('GET', key)`, `if v and byte(v, 1) <= 57 then v = pack('<c1d', 'n', redis.call('PEXPIRETIME', key) - tonumber(v) / 4096) end`];
          return [`local v = redis.call('GET', key)`];
        case 'store':
          if (hasLog) return [fill(expand('slidingLog', 'store'), logVars, 'slidingLog.lua (store)')];
          return [
            'if fresh > 1e13 then',
            `  redis.call('SET', key, $STATE_VALUE)`,
            ...(compact ? [
              // the compact form when the number is on the server's clock and a multiple of 2^-12 ms (always, past 2^40 ms),
              // on Redis 7.0 or later (PEXPIRETIME reads it back; REDIS_VERSION_NUM is nil before 7.0)
              'else',
              `  local e = ceil(${state[0]})`,
              `  local j = (e - ${state[0]}) * 4096`,
              '  if sclock and j == floor(j) and redis.REDIS_VERSION_NUM then',
              `    redis.call('SET', key, j, 'PXAT', e)`,
              '  else',
              `    redis.call('SET', key, $STATE_VALUE, 'PX', ceil(fresh))`,
              '  end',
            ] : ['else', `  redis.call('SET', key, $STATE_VALUE, 'PX', ceil(fresh))`]),
            'end',
          ];
        default: throw new Error(`ratekeeper/redis: policy.lua has an unknown line @${what}`);
      }
    })();
    return block.join('\n').split('\n').map((l) => pad + l);
  });
  let text = lines.join('\n');
  const zeros = state.map(() => '0').join(', ');
  const logValue: string[] = [];
  const vars: Record<string, string> = {
    LOCALS: [`local fresh = 0`, ...chunk(locals).map((c) => `local ${c.join(', ')}`), ...(state.length > 0 ? [`local ${state.join(', ')}`] : [])].join('\n'),
    STATE_BYTES: String(state.length * 8),
    STATE_FMT: `<${'d'.repeat(state.length)}`,
    STATE: state.join(', '),
    ZEROS: zeros,
    ALL_OK: rules.map((_, i) => `ok${i + 1}`).join(' and '),
    RULE_REPLY: flat ? replies.join(', ') : '',
    REPLY_FMT: fmt(HEAD_DOUBLES + replyCount + TAIL_DOUBLES),
    LIVE_FMT: fmt(HEAD_DOUBLES + replyCount + LIVE_TAIL_DOUBLES),
    HEAD: String(head),
    STATE_VALUE: [state.length > 0 ? `pack('<c1${'d'.repeat(state.length)}', 'n', ${state.join(', ')})` : `'n'`, ...logValue].join(' .. '),
    STATE_BODY: [state.length > 0 ? `pack('<${'d'.repeat(state.length)}', ${state.join(', ')})` : `''`, ...logValue].join(' .. '),
    ADMITTED: flavor === 'compound' ? 'allowed and mode == 2' : 'allowed',
    RET: flavor === 'compound' ? (dry ? ', true' : ', allowed') : '',
    RET_LIVE: flavor === 'compound' ? (dry ? ', true' : ', okind == 3') : '',
  };
  if (state.length === 0) text = text.replace(/^if v and #v >= at \+ \$STATE_BYTES - 1 then .*$/m, '');
  if (!flat) {
    // each rule packed its own part: the reply is the outcome, the parts, and for an override its end and reason
    text = text
      .replace(/pack\('\$LIVE_FMT', okind, \$RULE_REPLY, now, ountil, wall\)/, `pack('<d', okind) .. ${replies.join(' .. ')} .. pack('<ddd', now, ountil, wall)`)
      .replace(/pack\('\$REPLY_FMT', 1, \$RULE_REPLY, wall\)/, `pack('<d', 1) .. ${replies.join(' .. ')} .. pack('<d', wall)`)
      .replace(/pack\('\$REPLY_FMT', 0, \$RULE_REPLY, wall\)/, `pack('<d', 0) .. ${replies.join(' .. ')} .. pack('<d', wall)`);
  }
  return fill(text, vars, 'policy.lua');
}

/** describe — a policy's rules, for a script's first lines. */
const describe = (policy: Policy): string => policy.rules.map((r) => `${printable(r.name)} (${r.algorithm}, ${r.accounting})`).join('; ');

/** finish — a script's text with its prelude: a local for each library function it calls (each one a global lookup per call otherwise). */
function finish(title: string, code: string): Script {
  const used = (name: string): boolean => new RegExp(`\\b${name}\\b`).test(code.replace(/--[^\n]*/g, ''));
  const prelude = Object.entries(LIBRARY).filter(([name]) => used(name));
  return new Script(`${title}\nlocal ${prelude.map(([n]) => n).join(', ')} = ${prelude.map(([, v]) => v).join(', ')}\n${code}`);
}

/** section — a section of policy.lua with its `@body` (or `@functions`) line replaced and its `@clock` line pasted. */
function section(name: 'check' | 'refund' | 'compound', replacement: string): string {
  const policy = template('policy');
  return (policy.get(name) as string)
    .replace(/^@clock$/m, () => policy.get('clock') as string)
    .replace(/^@(body|functions)$/m, () => replacement);
}

/** policyScript — the one straight-line check script of a policy (policy.lua's `check`, the body at top level). */
export function policyScript(policy: Policy): Script {
  return finish(
    `-- ratekeeper: the check of one policy, written from src/stores/redis/lua/policy.lua and the rules' templates (KEYS, ARGV and reply: see policy.lua).\n-- The policy: ${describe(policy)}`,
    section('check', body(policy, 'check')),
  );
}

/** refundScript — gives back a charge of one client of a policy (policy.lua's `refund`), then reports as a check of cost 0. */
export function refundScript(policy: Policy): Script {
  return finish(
    `-- ratekeeper: the refund of one policy, written from src/stores/redis/lua/policy.lua and the rules' templates (KEYS, ARGV and reply: see policy.lua).\n-- The policy: ${describe(policy)}`,
    section('refund', body(policy, 'refund')),
  );
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
  return finish(
    `-- ratekeeper: a compound check of ${policies.length} parts, written from src/stores/redis/lua/policy.lua and the rules' templates (KEYS, ARGV and reply: see policy.lua).\n${titles.join('\n')}`,
    section('compound', fns.join('\n')),
  );
}

/** constantVars — a rule's constants as placeholder values (literals). */
function constantVars(r: RuleConfig, logPer: number, logLimit: number): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [k, x] of Object.entries(constants(r, logPer, logLimit))) vars[k] = lit(x);
  return vars;
}

/** printable — a rule name as it may appear in a Lua line comment: no line break or other control character, and no `$` (placeholders are filled after). */
const printable = (name: string): string => name.replace(/[^\x20-\x23\x25-\x7e]/g, '?');

/** indent — two more spaces on every line. */
const indent = (text: string): string => text.split('\n').map((l) => (l === '' ? l : `  ${l}`)).join('\n');

/** chunk — a list in slices of 50 (one `local` statement per slice). */
function chunk<T>(list: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += 50) out.push(list.slice(i, i + 50));
  return out;
}

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
