--[[
policy.lua — one check of one client against the whole policy, the twin of Policy.evaluate in src/core/policy.ts:
every rule decides, all-or-nothing; an admitted request charges every rule, a refused one only the rules with strict
accounting (the shared sliding log follows its own accounting); cost 0 charges nothing; a live block or exemption
charges nothing and reports the rules' state.

This file is the template of three scripts, in sections (`--@@ name`): `check` (one check, the body at top level),
`refund` (gives back a charge, then reports as a check of cost 0 would: limiter.refund) and `compound` (several
clients of several policies decided all-or-nothing: checkAll). At attach time the composer (src/stores/redis/scripts.ts)
writes one straight-line script per policy from it — no tables, closures or loops over rules at run time. It pastes each rule's
templates from its algorithm's file (gcra.lua …) where the `@decide`, `@charge`, `@report` lines are, each in its own
do … end block, with the rule's state variables, outputs and parameters (as exact numeric literals) filled in. Its
own placeholders: $LOCALS — the declarations of every rule's variables; $STATE — the rules' state variables s1, s2 …
in Policy's layout; $STATE_BYTES, $STATE_FMT — their size and struct format; $ZEROS — a fresh client's state;
$ALL_OK — every rule admits; $RULE_REPLY, $REPLY_FMT, $LIVE_FMT — the reply below; $STATE_VALUE — the value as stored ('n' and the state);
$PRELUDE — locals for the library functions the script uses (floor = math.floor, pack = struct.pack …, INF);
$STATE_BODY — the state as stored after an override's header; $ADMITTED — whether the request is charged as admitted
(its rules admit it, and, in a compound script, no other part refused it); $RET, $RET_LIVE — what a compound part
returns beside its reply (whether its decision is `allowed`); `@adopt` — a shared policy's conversion of a state
written under other limits (gcra.lua's `adopt`; nothing for the others, whose numbers mean the same under any limit);
`@verdict`, `@refund`, `@store_live` — the lines only
the compound script (a part's verdict, mode 1) or the refund script (the rules' refunds; the state written back under
a live override) has.
Lines starting with `@log` are kept only when the policy has slidingLog rules.

KEYS[1] — the client's value (record.lua): an optional block or exemption header, then the state: little-endian
          doubles, the rules' state ($STATE, each algorithm's numbers as its file says: ms and cost units), then,
          with slidingLog rules, the shared log (slidingLog.lua). Absent = a fresh client. Written with PX = the time
          until the state is equivalent to a fresh client's (the longest resetAfter); deleted when it already is.
          A state of one number and no log (one gcra rule) written on the server's clock is compact instead: a
          decimal integer j in [0, 4096) and an expiry (PXAT) at the number rounded up to the ms, E; the number is
          E − j/4096 (exact: a time past 2^40 ms is a multiple of 2^-12 ms), and E is when it becomes a fresh
          client's. A small integer is an object Redis shares: the key costs no value of its own. (Redis 7.0 or later,
          for PEXPIRETIME; before, the state keeps the full form.)
ARGV[1] — now: ms since the epoch, a decimal string; '' (or no ARGV at all) to use the server's TIME.
ARGV[2] — cost: cost units, a decimal string >= 0; absent: 1. (The store sends no ARGV for the common check: the
          server's clock, cost 1, no deadline.)
ARGV[3] — deadline (optional): ms on the server's clock (TIME). A check that starts at or after it changes nothing
          and replies with the error `LATE`: its caller has given up on it (answered by the failure policy), so it
          must not be charged. (Refunds and compound checks carry no deadline.)
Refund: the same KEYS[1] and ARGV[1]; ARGV[2] — the cost to give back; ARGV[3] — '1' to give it back to the rules
with leaky accounting only (a compound request refused elsewhere), '0' to every rule. The reply is a check's of cost 0.
Compound: KEYS — one client value per part (each of its own policy, as for a check); ARGV[1] — now, as above;
ARGV[1 + i] — part i's cost. Every part decides on its stored state (mode 1: nothing charged) until one refuses; then
every part is decided again and charged as admitted only if none refused (mode 2), else as refused (mode 3: strict
rules only; its reply keeps its own verdict). Returns one reply per part, in order, each as a check's.

Returns little-endian doubles, lossless: the outcome (1 admitted, 0 refused, 2 blocked, 3 exempt); per rule, in
order: admits (1 or 0), remaining, retryAfter (ms), resetAfter (ms), then rate (per second) for earrrl and
exponential and delay (ms) for leakyBucket; for a block or exemption, then now (ms) and the override's end (ms, or
inf); then the server's clock (TIME, ms; −1 when the script did not read it), from which the store learns the offset
of its deadlines; then, for a block with a reason, 'r' and the reason as bytes (an empty reason is told from none).
]]

--@@ check
local key = KEYS[1]
local now, cost, deadline = ARGV[1], ARGV[2], ARGV[3]
local sclock = now == nil or now == ''
local wall = -1
if now == nil or now == '' or deadline then
  local t = redis.call('TIME')
  wall = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end
if now == nil or now == '' then now = wall else now = tonumber(now) end
if deadline and wall >= tonumber(deadline) then return redis.error_reply('LATE the caller gave up on this check before it ran') end
if cost == nil then cost = 1 else cost = tonumber(cost) end
@body

--@@ clock
-- (refund, compound) now: ARGV's time, or the server's TIME when it is ''; wall — the server's time when read (−1: not
-- read); sclock — whether now is the server's clock
local sclock = now == ''
local wall = -1
if now == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
  wall = now
else
  now = tonumber(now)
end

--@@ refund
local key = KEYS[1]
local now, cost, leakyOnly = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
@clock
@body

--@@ compound
local now = ARGV[1]
@clock
local F = {}
@functions
-- the verdicts on the stored state until one refuses; the last part decided for real (its verdict is its second
-- value); then the others, charged as admitted only if every part admitted
local n = #KEYS
local all = true
for i = 1, n - 1 do
  if not F[i](KEYS[i], tonumber(ARGV[i + 1]), 1) then
    all = false
    break
  end
end
local out = {}
local last, ok = F[n](KEYS[n], tonumber(ARGV[n + 1]), all and 2 or 3)
out[n] = last
if not ok then all = false end
local mode = all and 2 or 3
for i = 1, n - 1 do out[i] = F[i](KEYS[i], tonumber(ARGV[i + 1]), mode) end
return out

--@@ store_live
-- (refund) a state changed under a live block or exemption: written back after the override's header, whose se (the
-- state's end on the server's clock) is renewed; the key expires at the later of the override's and the state's ends
if live and changed then
  @live_ends
  local value = sub(v, 1, 18) .. pack('<d', se) .. sub(v, 27, at - 1) .. $STATE_BODY
  if d - w > 1e13 then
    -- inf, or past ~317 years: no expiry rather than a PX Redis refuses
    redis.call('SET', key, value)
  elseif d > w then
    redis.call('SET', key, value, 'PX', ceil(d - w))
  else
    redis.call('DEL', key)
  end
end

--@@ live_ends
-- (store_live, here and in slidingLog.lua) w — the server's time (TIME, ms); se — the state's new end on it (0: already
-- a fresh client's); d — when the key is to expire: the later of the override's end (oe, in v's header) and se
local t = redis.call('TIME')
local w = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local se = 0
if fresh > 0 then se = w + fresh end
local d = unpack('<d', v, 11)
if se > d then d = se end

--@@ body
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
@log local le, loff, ln, lcap, lbase, ltotal, lnewest, lcharged, lwhole, lbuf, lpos, ldata, cq, ck, ldrop
@log @read(at + $STATE_BYTES)
local changed = false
@adopt
@refund

-- Every rule decides on the state before the request; n… hold the state as charged.
@decide
local allowed = $ALL_OK
@verdict
local admitted = $ADMITTED

-- Charge: every rule when admitted, the strict ones when refused; nothing at cost 0, nor under a live override.
@charge

-- Every rule reports from the state as stored.
@report
@store_live
if live then return pack('$LIVE_FMT', okind, $RULE_REPLY, now, ountil, wall) .. (oreason and ('r' .. oreason) or '')$RET_LIVE end

-- Store, to expire when the state decides as a fresh client's would (fresh: the longest resetAfter): never earlier.
if changed then
  if fresh > 0 then
    -- (past 1e13 ms, ~317 years, or inf: no expiry rather than a PX Redis refuses; never forgive early)
    @store
  else
    redis.call('DEL', key)
  end
end
if allowed then return pack('$REPLY_FMT', 1, $RULE_REPLY, wall)$RET end
return pack('$REPLY_FMT', 0, $RULE_REPLY, wall)$RET
