--[[
policy.lua — one check of one client against the whole policy, the twin of Policy.evaluate in src/core/policy.ts:
every rule decides, all-or-nothing; an admitted request charges every rule, a refused one only the rules with strict
accounting (the shared sliding log follows its own accounting); cost 0 charges nothing; a live block or exemption
charges nothing and reports the rules' state.

This file is the template of the script: at attach time the composer (src/stores/redis/scripts.ts) writes one
straight-line script per policy from it — no tables, closures or loops over rules at run time. It pastes each rule's
templates from its algorithm's file (gcra.lua …) where the `@decide`, `@charge`, `@report` lines are, each in its own
do … end block, with the rule's state variables, outputs and parameters (as exact numeric literals) filled in. Its
own placeholders: $LOCALS — the declarations of every rule's variables; $STATE — the rules' state variables s1, s2 …
in Policy's layout; $STATE_BYTES, $STATE_FMT — their size and struct format; $ZEROS — a fresh client's state;
$ALL_OK — every rule admits; $RULE_REPLY, $REPLY_FMT, $LIVE_FMT — the reply below; $STATE_VALUE — the value as stored ('n' and the state);
$PRELUDE — locals for the library functions the script uses (floor = math.floor, pack = struct.pack …, INF).
Lines starting with `@log` are kept only when the policy has slidingLog rules.

KEYS[1] — the client's value (record.lua): an optional block or exemption header, then the state: little-endian
          doubles, the rules' state ($STATE, each algorithm's numbers as its file says: ms and cost units), then,
          with slidingLog rules, the shared log (slidingLog.lua). Absent = a fresh client. Written with PX = the time
          until the state is equivalent to a fresh client's (the longest resetAfter); deleted when it already is.
ARGV[1] — now: ms since the epoch, a decimal string; '' (or no ARGV at all) to use the server's TIME.
ARGV[2] — cost: cost units, a decimal string >= 0; absent: 1. (The store sends no ARGV for the common check: the
          server's clock, cost 1, no deadline.)
ARGV[3] — deadline (optional): ms on the server's clock (TIME). A script that starts at or after it changes nothing
          and replies with the error `LATE`: its caller has given up on it (answered by the failure policy), so it
          must not be charged.

Returns little-endian doubles, lossless: the outcome (1 admitted, 0 refused, 2 blocked, 3 exempt); per rule, in
order: admits (1 or 0), remaining, retryAfter (ms), resetAfter (ms), then rate (per second) for earrrl and
exponential and delay (ms) for leakyBucket; for a block or exemption, then now (ms) and the override's end (ms, or
inf); then the server's clock (TIME, ms; −1 when the script did not read it: an explicit now and no deadline), from
which the store learns the offset of its deadlines; then, for a block with a reason, 'r' and the reason as bytes
(so that an empty reason is told from none).
]]
$PRELUDE
local key = KEYS[1]
local now, cost, deadline = ARGV[1], ARGV[2], ARGV[3]
local wall = -1
if now == nil or now == '' or deadline then
  local t = redis.call('TIME')
  wall = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
if now == nil or now == '' then now = wall else now = tonumber(now) end
if deadline and wall >= tonumber(deadline) then return redis.error_reply('LATE the caller gave up on this check before it ran') end
if cost == nil then cost = 1 else cost = tonumber(cost) end

@fetch
-- at — where the state starts in v: after 'n', or after an override's header ('o', kind, 4 doubles, the reason).
-- live — a block or exemption in force: every rule decides the request without being charged (nothing is stored),
-- so that a block's wait includes the rules'; one that is over is forgotten (as the memory store does), keeping the
-- state and its expiry.
local at, live, okind, ountil, oreason = 2, false
if v and byte(v, 1) == 111 then
  local untilMs, oe, se, rlen = unpack('<dddd', v, 3)
  at = 35
@log   if not whole and rlen > 0 then
@log     -- the head read so far may stop in the reason: read it again, as long again as the reason
@log     v = redis.call('GETRANGE', key, 0, 33 + rlen + $HEAD - 1)
@log     whole = #v < 33 + rlen + $HEAD
@log   end
  if rlen >= 0 then
    oreason = sub(v, 35, 34 + rlen)
    at = 35 + rlen
  end
  if untilMs > now then
    live, ountil = true, untilMs
    if byte(v, 2) == 98 then okind = 2 else okind = 3 end
  elseif #v >= at then
@log     if not whole then v, whole = redis.call('GET', key), true end
    redis.call('SET', key, 'n' .. sub(v, at), 'KEEPTTL')
@log     v, at = 'n' .. sub(v, at), 2
  else
    redis.call('DEL', key)
  end
end

$LOCALS
if v and #v >= at + $STATE_BYTES - 1 then $STATE = unpack('$STATE_FMT', v, at) else $STATE = $ZEROS end
@log local le, loff, ln, lcap, lbase, ltotal, lnewest, lcharged, lwhole, lbuf, lpos, ldata, cq, ck
@log @read(at + $STATE_BYTES)

-- Every rule decides on the state before the request; n… hold the state as charged.
@decide
local allowed = $ALL_OK

-- Charge: every rule when admitted, the strict ones when refused; nothing at cost 0, nor under a live override.
local changed = false
@charge

-- Every rule reports from the state as stored.
@report
if live then return pack('$LIVE_FMT', okind, $RULE_REPLY, now, ountil, wall) .. (oreason and ('r' .. oreason) or '') end

-- Store, to expire when the state decides as a fresh client's would (fresh: the longest resetAfter): never earlier.
if changed then
  if fresh > 0 then
    -- (past 1e13 ms, ~317 years, or inf: no expiry rather than a PX Redis refuses; never forgive early)
    @store
  else
    redis.call('DEL', key)
  end
end
if allowed then return pack('$REPLY_FMT', 1, $RULE_REPLY, wall) end
return pack('$REPLY_FMT', 0, $RULE_REPLY, wall)
