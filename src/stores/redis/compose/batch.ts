/**
 * compose/batch — the script of a batch of one client's checks of one policy (the store's batch.ts sends it): the
 * policy's check body as a Lua function, applied to each check in order, each reply a single check's.
 * ARGV[1] — the batch's deadline ('' none); then either
 *   - (now, cost) pairs, now '' for the server's clock (an odd ARGV count), or
 *   - '*', n, cost: n checks of one cost, all on the server's clock (an even ARGV count: the common run of a hot key).
 * One TIME per batch serves every check on the server's clock. The reply is two strings: every check's reply,
 * concatenated in order; then the server's clock (a double, −1 when not read) and the byte length of each reply that
 * is not a plain one's (ReplyReader.replyBytes: a block's or exemption's, longer by its end, now and reason), a double
 * each, in order — two bulk strings to read rather than an array of n, and no length to pack per check.
 *
 * The client's value is read once and written once per batch where the body touches it only by GET, SET, DEL and
 * PEXPIRETIME (every algorithm but the sliding log): `kcall` serves a GET from the batch's copy and keeps the last
 * write until the end (or until a command it does not serve needs the key as written). A deferred SET … PX sets its
 * expiry at most the batch's few µs later than one by one would: never earlier. gcra's compact value (a number
 * written with PXAT) is kept as that number: a GET of it answers the 'n' form fetch_compact would make of it (the same
 * double), without writing its digits and reading them back per check.
 */
import type { Policy } from '../../../core/policy.js';
import { body } from './body.js';
import { ReplyReader } from '../reply.js';
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
    'local out, odd, nodd = {}, {}, 0',
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
    '  out[i] = r',
    `  if #r ~= ${new ReplyReader(policy).replyBytes} then`,
    '    nodd = nodd + 1',
    "    odd[nodd] = struct.pack('<d', #r)",
    '  end',
    'end',
    ...(served ? ['kflush()'] : []),
    "return { table.concat(out), struct.pack('<d', wall) .. table.concat(odd) }",
  ].join('\n');
  return finish(`-- ratekeeper: a batch of checks of one client of one policy, in order (src/stores/redis/batch.ts)`, code);
}

/**
 * KCALL — the batch's copy of the client's value: `kval` as the checks so far left it (false: none; loaded at the
 * first GET), and the write they owe Redis (`kop` 'SET' with `kset` and its expiry arguments `kt1`, `kt2`, or 'DEL').
 * `kcompact` — kset is gcra's compact number, written with PXAT kt2: a GET answers the 'n' form of kt2 − kset / 4096,
 * exactly what fetch_compact makes of that number and its expiry (lua/policy.lua).
 */
const KCALL = [
  'local kval, kloaded, kop, kset, kt1, kt2, kcompact = false, false, nil, nil, nil, nil, false',
  'local function kflush()',
  "  if kop == 'DEL' then redis.call('DEL', key)",
  "  elseif kop == 'SET' and kt1 == nil then redis.call('SET', key, kset)",
  "  elseif kop == 'SET' and kt2 == nil then redis.call('SET', key, kset, kt1)",
  "  elseif kop == 'SET' then redis.call('SET', key, kset, kt1, kt2) end",
  '  kop = nil',
  'end',
  'local function kcall(cmd, v, t1, t2)',
  "  if cmd == 'GET' then",
  "    if not kloaded then kval, kloaded = redis.call('GET', key), true end",
  "    if kcompact then return pack('<c1d', 'n', kt2 - kset / 4096) end",
  '    return kval',
  "  elseif cmd == 'SET' then",
  // KEEPTTL keeps the expiry of the write before it (a DEL's: none), or Redis's when the batch has not written yet
  "    if t1 == 'KEEPTTL' then",
  "      if kop == 'DEL' then t1 = nil elseif kop == 'SET' then t1, t2 = kt1, kt2 end",
  '    end',
  "    kop, kset, kt1, kt2, kloaded = 'SET', v, t1, t2, true",
  // a number is stored as its decimal string; a GET of it reads that string (the same double back)
  "    kcompact = type(v) == 'number' and t1 == 'PXAT'",
  "    if type(v) == 'number' and not kcompact then kval = string.format('%.17g', v) elseif not kcompact then kval = v end",
  '    return true',
  "  elseif cmd == 'DEL' then",
  "    kop, kval, kloaded, kcompact = 'DEL', false, true, false",
  '    return 1',
  '  end',
  "  if kop == 'SET' and kt1 == 'PXAT' then return kt2 end",
  '  kflush()',
  "  return redis.call('PEXPIRETIME', key)",
  'end',
];
