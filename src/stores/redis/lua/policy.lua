--[[
policy.lua — one check of one client against the whole policy, the twin of Policy.evaluate in src/core/policy.ts:
every rule decides, all-or-nothing; an admitted request charges every rule, a refused one only the rules with strict
accounting (the shared sliding log follows its own accounting); cost 0 charges nothing; a live block or exemption
charges nothing and reports the rules' state.

This file is the template of three scripts, in sections (`--@@ name`): `check` (one check, the body at top level),
`refund` (gives back a charge, then reports as a check of cost 0 would: limiter.refund) and `compound` (several
clients of several policies decided all-or-nothing: checkAll). At attach time the composer (src/stores/redis/compose/)
writes one straight-line script per policy from it — no tables, closures or loops over rules at run time — with one
way to fill a template (compose/template.ts): `$NAME` is a value, a line `@name(ARG = text)` pastes a section. Each
rule's templates from its algorithm's file (gcra.lua …), each in its own do … end block with the rule's state
variables, outputs and parameters (as exact numeric literals) filled in, are the lines $DECIDE, $ADOPT, $CHARGE,
$REPORT. The body's other values: $FETCH — reads the value (`fetch`, `fetch_compact`, or slidingLog.lua's `fetch`);
$LOCALS — the declarations of every rule's variables; $LOAD — the rules' state variables s1, s2 … ($STATE, in
Policy's layout; $STATE_BYTES, $STATE_FMT — their size and struct format; $ZEROS — a fresh client's state) read
from v (`load`; nothing without state); $ALL_OK — every rule admits; $ADMITTED — whether the request is charged
as admitted (its rules admit it, and, in a compound script, no other part refused it); $LIVE_REPLY, $ADMIT_REPLY,
$REFUSE_REPLY — the reply below, as packed (compose/reply.ts); $RET, $RET_LIVE — what a compound part returns beside
its reply (whether its decision is `allowed`); $STORE — writes the state (`store`, `store_compact`, or
slidingLog.lua's `store`) as $STATE_VALUE ('n' and the state); $STATE_BODY — the state as stored after an
override's header; $ADOPT — a shared policy's conversion of a state written under other limits (gcra.lua's
`adopt`; nothing for the others, whose numbers mean the same under any limit); $VERDICT, $REFUND, $STORE_LIVE — the
lines only the compound script (a part's verdict, mode 1: `verdict`, `verdict_dry`) or the refund script (the
rules' refunds: `give_back`; the state written back under a live override: `store_live`) has; $LOG_REREAD,
$LOG_WHOLE, $LOG_UNWRAP, $LOG_HEAD — the lines only a policy with slidingLog rules has (slidingLog.lua's `reread`,
`whole`, `unwrap`, `head`). The composer writes the prelude before: locals for the library functions the script
uses (floor = math.floor, pack = struct.pack …, INF).
`store_compact` writes the compact form when the number is on the server's clock and a multiple of 2^-12 ms (always,
past 2^40 ms), on Redis 7.0 or later (PEXPIRETIME reads it back; REDIS_VERSION_NUM is nil before 7.0); `fetch_compact`
reads it back: the number is the key's expiry less j/4096 ms.

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
$BODY

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
$BODY

--@@ compound
local now = ARGV[1]
@clock
local F = {}
$FUNCTIONS
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
$FETCH
-- at — where the state starts in v: after 'n', or after an override's header ('o', kind, 4 doubles, the reason).
-- live — a block or exemption in force: every rule decides the request without being charged (nothing is stored),
-- so that a block's wait includes the rules'; one that is over is forgotten (as the memory store does), keeping the
-- state and its expiry.
local at, live, okind, ountil, oreason = 2, false
if v and byte(v, 1) == 111 then
  local untilMs, oe, se, rlen = unpack('<dddd', v, 3)
  at = 35
  $LOG_REREAD
  if rlen >= 0 then
    oreason = sub(v, 35, 34 + rlen)
    at = 35 + rlen
  end
  if untilMs > now then
    live, ountil = true, untilMs
    if byte(v, 2) == 98 then okind = 2 else okind = 3 end
  elseif #v >= at then
    $LOG_WHOLE
    redis.call('SET', key, 'n' .. sub(v, at), 'KEEPTTL')
    $LOG_UNWRAP
  else
    redis.call('DEL', key)
  end
end

$LOCALS
$LOAD
$LOG_HEAD
local changed = false
$ADOPT
$REFUND

-- Every rule decides on the state before the request; n… hold the state as charged.
$DECIDE
local allowed = $ALL_OK
$VERDICT
local admitted = $ADMITTED

-- Charge: every rule when admitted, the strict ones when refused; nothing at cost 0, nor under a live override.
$CHARGE

-- Every rule reports from the state as stored.
$REPORT
$STORE_LIVE
if live then return $LIVE_REPLY .. (oreason and ('r' .. oreason) or '')$RET_LIVE end

-- Store, to expire when the state decides as a fresh client's would (fresh: the longest resetAfter): never earlier.
if changed then
  if fresh > 0 then
    -- (past 1e13 ms, ~317 years, or inf: no expiry rather than a PX Redis refuses; never forgive early)
    $STORE
  else
    redis.call('DEL', key)
  end
end
if allowed then return $ADMIT_REPLY$RET end
return $REFUSE_REPLY$RET

--@@ fetch
local v = redis.call('GET', key)

--@@ fetch_compact
local v = redis.call('GET', key)
if v and byte(v, 1) <= 57 then v = pack('<c1d', 'n', redis.call('PEXPIRETIME', key) - tonumber(v) / 4096) end

--@@ load
if v and #v >= at + $STATE_BYTES - 1 then $STATE = unpack('$STATE_FMT', v, at) else $STATE = $ZEROS end

--@@ give_back
if v and #v >= at then
  $REFUNDS
  changed = true
end
cost = 0

--@@ verdict
if mode == 1 then if live then return okind == 3 end return allowed end

--@@ verdict_dry
if mode == 1 then return true end

--@@ store
if fresh > 1e13 then
  redis.call('SET', key, $STATE_VALUE)
else
  redis.call('SET', key, $STATE_VALUE, 'PX', ceil(fresh))
end

--@@ store_compact
if fresh > 1e13 then
  redis.call('SET', key, $STATE_VALUE)
else
  local e = ceil($STATE)
  local j = (e - $STATE) * 4096
  if sclock and j == floor(j) and redis.REDIS_VERSION_NUM then
    redis.call('SET', key, j, 'PXAT', e)
  else
    redis.call('SET', key, $STATE_VALUE, 'PX', ceil(fresh))
  end
end
