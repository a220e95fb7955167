/**
 * compose/batch — the script of a batch of one client's checks of one policy (the store's batch.ts sends it): the
 * policy's check body as a Lua function, applied to each check in order, each reply a single check's.
 * ARGV[1] — the batch's deadline ('' none); then either
 *   - (now, cost) pairs, now '' for the server's clock (an odd ARGV count), or
 *   - '*', n, cost: n checks of one cost, all on the server's clock (an even ARGV count: the common run of a hot key).
 * One TIME per batch serves every check on the server's clock. The reply is one string: per check, its reply's length
 * (4 bytes, little-endian) then the reply — one bulk string to read rather than an array of n.
 *
 * The client's value is read once and written once per batch where the body touches it only by GET, SET, DEL and
 * PEXPIRETIME (every algorithm but the sliding log): `kcall` serves a GET from the batch's copy and keeps the last
 * write until the end (or until a command it does not serve needs the key as written). A deferred SET … PX sets its
 * expiry at most the batch's few µs later than one by one would: never earlier.
 */
import type { Policy } from '../../../core/policy.js';
import { body } from './body.js';
import { type Script, finish } from '../scripts.js';

/** batchScript — the check body of `policy` as a function, applied to each check of ARGV in order. */
export function batchScript(policy: Policy): Script {
  const check = body(policy, 'check');
  const cached = check.replace(/redis\.call\('(GET|SET|DEL|PEXPIRETIME)', key([,)])/g, "kcall('$1'$2");
  const served = !/redis\.call\('[A-Z]+', key[,)]/.test(cached);
  const code = [
    'local key = KEYS[1]',
    "local deadline = ARGV[1]",
    "if deadline == '' then deadline = nil end",
    ...(served ? KCALL : []),
    'local function one(now, cost, sclock, wall)',
    served ? cached : check,
    'end',
    "local same = #ARGV % 2 == 0",
    'local n, same_cost',
    'if same then n, same_cost = tonumber(ARGV[3]), tonumber(ARGV[4]) else n = (#ARGV - 1) / 2 end',
    'local wall = -1',
    'local clock = same or deadline ~= nil',
    "if not clock then for i = 1, n do if ARGV[2 * i] == '' then clock = true break end end end",
    'if clock then',
    "  local t = redis.call('TIME')",
    '  wall = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000',
    'end',
    "if deadline and wall >= tonumber(deadline) then return redis.error_reply('LATE the caller gave up on this batch before it ran') end",
    'local out = {}',
    'for i = 1, n do',
    '  local r',
    '  if same then',
    '    r = one(wall, same_cost, true, wall)',
    '  else',
    '    local now = ARGV[2 * i]',
    "    local sclock = now == ''",
    '    if sclock then now = wall else now = tonumber(now) end',
    '    r = one(now, tonumber(ARGV[2 * i + 1]), sclock, wall)',
    '  end',
    "  out[i] = struct.pack('<I4', #r) .. r",
    'end',
    ...(served ? ['kflush()'] : []),
    'return table.concat(out)',
  ].join('\n');
  return finish(`-- ratekeeper: a batch of checks of one client of one policy, in order (src/stores/redis/batch.ts)`, code);
}

/**
 * KCALL — the batch's copy of the client's value: `kval` as the checks so far left it (false: none; loaded at the
 * first GET), and the write they owe Redis (`kop` 'SET' with `kset` and its expiry arguments `kttl`, or 'DEL').
 */
const KCALL = [
  'local kval, kloaded, kop, kset, kttl = false, false, nil, nil, nil',
  'local function kflush()',
  "  if kop == 'DEL' then redis.call('DEL', key)",
  "  elseif kop == 'SET' and kttl[1] == nil then redis.call('SET', key, kset)",
  "  elseif kop == 'SET' and kttl[2] == nil then redis.call('SET', key, kset, kttl[1])",
  "  elseif kop == 'SET' then redis.call('SET', key, kset, kttl[1], kttl[2]) end",
  '  kop = nil',
  'end',
  'local function kcall(cmd, v, t1, t2)',
  "  if cmd == 'GET' then",
  "    if not kloaded then kval, kloaded = redis.call('GET', key), true end",
  '    return kval',
  "  elseif cmd == 'SET' then",
  '    local ttl',
  "    if t1 == nil then ttl = {} elseif t1 ~= 'KEEPTTL' then ttl = { t1, t2 } elseif kop == 'SET' then ttl = kttl elseif kop == 'DEL' then ttl = {} else ttl = { 'KEEPTTL' } end",
  // a number is stored as its decimal string; a GET of it reads that string (the same double back)
  "    kop, kset, kttl, kloaded = 'SET', v, ttl, true",
  "    if type(v) == 'number' then kval = string.format('%.17g', v) else kval = v end",
  '    return true',
  "  elseif cmd == 'DEL' then",
  "    kop, kval, kloaded = 'DEL', false, true",
  '    return 1',
  '  end',
  "  if kop == 'SET' and kttl[1] == 'PXAT' then return kttl[2] end",
  '  kflush()',
  "  return redis.call('PEXPIRETIME', key)",
  'end',
];
