--[[
policy.lua — one check of one client against the whole policy, the twin of Policy.evaluate in src/core/policy.ts:
every rule decides, all-or-nothing; an admitted request charges every rule, a refused one only the rules with strict
accounting (the shared sliding log follows its own accounting); cost 0 charges nothing; a live block or exemption
charges nothing and reports the rules' state. The JS side composes the script sent per check as
(the core's slack constants) + common.lua + the algorithms the policy uses + the policy's layout + this file, so
one EVALSHA decides. Layout written by the composer: STATE_SIZE — numbers of rule state; STATE_FMT — their struct
format; HAS_LOG, LOG_STRICT, LOG_PER (ms), LOG_LIMIT (cost units) — the shared log; RULES — the rules, in order;
ZEROS() and REPLY() — new arrays of STATE_SIZE and 3 + 6·#RULES zeros (built by one constructor: Lua 5.1 would
grow a table assigned index by index, rehashing as it goes).

KEYS[1] — the client's value (record.lua): an optional block or exemption, then the state: little-endian doubles,
          the rules' state (STATE_SIZE numbers, each rule's at its offset; ms and cost units as each algorithm's
          file says), then, when HAS_LOG, the shared log (base, cost units; then (time ms, running total cost units)
          pairs). Absent = a fresh client. Written with PX = the time until the state is equivalent to a fresh
          client's; deleted when it already is.
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
ARGV[2] — cost: cost units, a decimal string >= 0.

Returns little-endian doubles, lossless (REPLY_FMT: 3 + 6 per rule): the outcome (1 admitted, 0 refused, 2 blocked,
3 exempt), now (ms), the override's end (ms, inf, or NaN when none); then per rule: admits (1 or 0), remaining,
retryAfter (ms), resetAfter (ms), rate (per second, NaN when the rule measures none), delay (ms, NaN when none);
then, for a block with a reason, the reason's bytes.
]]
local now = clock(ARGV[1])
local cost = tonumber(ARGV[2])
local count = #RULES
local key = KEYS[1]
local NAN = 0 / 0

local value = redis.call('GET', key)
local ov, at = Record.read(value)

-- The client's state: s (rule state, all zero when fresh) and L (the shared log), from byte `at` of the value.
local s
if at and STATE_SIZE > 0 and #value >= at + STATE_SIZE * 8 - 1 then
  s = { struct.unpack(STATE_FMT, value, at) }
  s[STATE_SIZE + 1] = nil
else
  s = ZEROS()
end
local L
if HAS_LOG then L = Log.decode(value, (at or 1) + STATE_SIZE * 8) end

-- out — the reply: 3 numbers, then 6 per rule at out[6i − 2 … 6i + 3].
local out = REPLY()

-- report — fills rule i's remaining, retryAfter and resetAfter from the state as stored after the decision, and
-- its delay, which an admission reports and a refusal does not (out[j + 1], rate and delay are already set).
local function report(i, allowed)
  local r = RULES[i]
  local st = r.log and L or s
  local j = 6 * i - 3
  out[j + 2] = r.remaining(r, st, now)
  out[j + 3] = allowed and 0 or r.wait(r, st, now, cost)
  out[j + 4] = r.reset_after(r, st, now)
  if not allowed and out[j + 6] == out[j + 6] then out[j + 6] = 0 end
end

-- decide — rule i's verdict at this cost from the state before the request, with its rate and delay (NaN when the
-- rule measures none); the state as charged goes to n.
local function decide(i, n)
  local r = RULES[i]
  local j = 6 * i - 3
  local ok, rate, delay
  if r.log then ok = r.admits(r, L, now, cost) else ok, rate, delay = r.next(r, s, now, cost, n) end
  out[j + 1] = ok and 1 or 0
  out[j + 5] = rate or NAN
  out[j + 6] = delay or NAN
  return ok
end

-- A live block or exemption: peek (every rule at cost 0, nothing stored) and report. One that is over is dropped.
if ov then
  if ov.untilMs > now then
    cost = 0
    out[1], out[2], out[3] = ov.kind == 'b' and 2 or 3, now, ov.untilMs
    local n = ZEROS()
    for i = 1, count do
      decide(i, n)
      report(i, true)
    end
    local reply = struct.pack(REPLY_FMT, unpack(out))
    if ov.reason then reply = reply .. ov.reason end
    return reply
  end
  -- Over: forget it (as the memory store does), keeping the state and its expiry.
  if #value >= at then redis.call('SET', key, 'n' .. string.sub(value, at), 'KEEPTTL') else redis.call('DEL', key) end
end

-- Every rule decides on the state before the request; n holds the state as charged.
local n = ZEROS()
local allowed = true
for i = 1, count do
  if not decide(i, n) then allowed = false end
end

-- Charge: every rule when admitted, the strict ones when refused; nothing at cost 0.
local changed = false
if cost > 0 then
  for i = 1, count do
    local r = RULES[i]
    if not r.log and (allowed or r.strict) then
      for k = r.o + 1, r.o + r.size do s[k] = n[k] end
      changed = true
    end
  end
  if HAS_LOG and (allowed or LOG_STRICT) then
    Log.push(L, now, cost)
    Log.trim(L, now - LOG_PER, LOG_LIMIT)
    changed = true
  end
end

out[1], out[2], out[3] = allowed and 1 or 0, now, NAN
local fresh = 0
for i = 1, count do
  report(i, allowed)
  local f = out[6 * i + 1]
  if f > fresh then fresh = f end
end

-- Store, to expire when the state decides as a fresh client's would: never earlier. (No live override here.)
if changed then
  if fresh > 0 then
    local v = STATE_SIZE > 0 and struct.pack(STATE_FMT, unpack(s)) or ''
    if HAS_LOG then v = v .. L.s end
    redis.call('SET', key, 'n' .. v, 'PX', ceil(fresh))
  else
    redis.call('DEL', key)
  end
end
return struct.pack(REPLY_FMT, unpack(out))
