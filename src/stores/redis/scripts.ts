import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Policy } from '../../core/policy.js';
import type { Algorithm } from '../../core/types.js';
import { NEGLIGIBLE, REL_SLACK, TIME_SLACK } from '../../core/algorithms/common.js';

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

/** constants — the core's tolerances, as exact Lua literals, written before common.lua. */
function constants(): string {
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

/** ALGORITHM_FILES — the .lua modules an algorithm needs, in the order they must appear. */
const ALGORITHM_FILES: Record<Algorithm, string[]> = {
  fixedWindow: ['fixedWindow'],
  slidingWindow: ['slidingWindow'],
  slidingLog: ['slidingLog'],
  tokenBucket: ['tokenBucket'],
  leakyBucket: ['tokenBucket', 'leakyBucket'],
  gcra: ['gcra'],
  earrrl: ['earrrl'],
  exponential: ['exponential'],
};

/**
 * policyScript — the one script of a policy: common.lua, record.lua, the algorithm modules its rules use, the policy's
 * constants (rule parameters written as exact literals, state offsets in Policy's layout) and policy.lua.
 */
export function policyScript(policy: Policy): Script {
  const files: string[] = [];
  for (const r of policy.rules) for (const f of ALGORITHM_FILES[r.algorithm]) if (!files.includes(f)) files.push(f);
  const logRules = policy.rules.filter((r) => r.algorithm === 'slidingLog');
  let offset = 0;
  const rules = policy.rules.map((r) => {
    const fields = [
      `limit = ${luaNumber(r.limit)}`, `per = ${luaNumber(r.per)}`, `burst = ${luaNumber(r.burst)}`,
      `halfLife = ${luaNumber(r.halfLife)}`, `strict = ${r.accounting === 'strict'}`, `o = ${offset}`,
    ];
    offset += stateSizeOf(r.algorithm);
    return `  ${r.algorithm}.new({ ${fields.join(', ')} }),`;
  });
  if (offset !== policy.stateSize) throw new Error(`ratekeeper/redis: state layout ${offset} differs from the policy's ${policy.stateSize}`);
  const layout = [
    `-- The policy: ${policy.rules.map((r) => `${r.name} (${r.algorithm}, ${r.accounting})`).join('; ')}`,
    `local STATE_SIZE = ${policy.stateSize}`,
    `local STATE_FMT = '<${'d'.repeat(policy.stateSize)}'`,
    `local REPLY_FMT = '<${'d'.repeat(3 + 6 * policy.rules.length)}'`,
    `local function ZEROS() return { ${Array(policy.stateSize).fill('0').join(', ')} } end`,
    `local function REPLY() return { ${Array(3 + 6 * policy.rules.length).fill('0').join(', ')} } end`,
    `local HAS_LOG = ${logRules.length > 0}`,
    `local LOG_STRICT = ${logRules[0]?.accounting === 'strict'}`,
    `local LOG_PER = ${luaNumber(Math.max(0, ...logRules.map((r) => r.per)))}`,
    `local LOG_LIMIT = ${luaNumber(Math.max(0, ...logRules.map((r) => r.limit)))}`,
    'local RULES = {',
    ...rules,
    '}',
  ].join('\n');
  return new Script([constants(), lua('common'), lua('record'), ...files.map(lua), layout, lua('policy')].join('\n'));
}

/** stateSizeOf — numbers of state per client of an algorithm, as the core's rules keep them (slidingLog: in the log). */
function stateSizeOf(a: Algorithm): number {
  switch (a) {
    case 'slidingLog': return 0;
    case 'gcra': return 1;
    case 'slidingWindow': return 3;
    default: return 2;
  }
}

/** opScript — one of the small scripts (override, unoverride, reset): common.lua, record.lua and the file. */
export const opScript = (name: 'override' | 'unoverride' | 'reset'): Script => new Script([constants(), lua('common'), lua('record'), lua(name)].join('\n'));

/**
 * policyId — names a policy's state layout in its keys, so that limiters with different policies on one Redis
 * never read each other's state (and a limiter never reads a layout it does not know).
 */
export function policyId(policy: Policy): string {
  const shape = policy.rules.map((r) => [r.algorithm, r.limit, r.per, r.burst, r.halfLife, r.accounting]);
  return createHash('sha1').update(JSON.stringify(['ratekeeper-redis-1', shape])).digest('hex').slice(0, 12);
}
