--[[
policy.lua — one check of one client against the whole policy, the twin of Policy.evaluate in src/core/policy.ts:
every rule decides, all-or-nothing; an admitted request charges every rule, a refused one only the rules with strict
accounting (the shared sliding log follows its own accounting); cost 0 charges nothing; a live block or exemption
charges nothing and reports the rules' state. The JS side composes the script sent per check as
(the core's slack constants) + common.lua + the algorithms the policy uses + the policy's layout + this file, so
one EVALSHA decides. Layout written by the composer: STATE_SIZE — numbers of rule state; STATE_FMT — their struct
format; HAS_LOG, LOG_STRICT, LOG_PER (ms), LOG_LIMIT (cost units) — the shared log; RULES — the rules, in order.

KEYS[1] — the client's hash (one key per client and policy, so the script is single-key and a slot migration
          answers ASK/MOVED, never TRYAGAIN or CROSSSLOT). Fields:
          s  — the state: little-endian doubles, the rules' state (STATE_SIZE numbers, each rule's at its offset;
               ms and cost units as each algorithm's file says), then, when HAS_LOG, the shared log (base, cost
               units; then (time ms, running total cost units) pairs). Absent = a fresh client.
          se — when s becomes equivalent to a fresh client's: ms since the epoch on the server's clock.
          o  — the block or exemption: '<b|e> <until: ms since the epoch, or inf>', then a newline and the reason.
          oe — when o ends, ms on the server's clock, or inf.
          The key expires (PEXPIRE) at the later of se and oe: never before the state is as good as fresh.
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
ARGV[2] — cost: cost units, a decimal string >= 0.

Returns one string: '<a|d|b|e> <now ms> <override until ms or -> ' (a admitted, d refused, b blocked, e exempt)
followed by six fields per rule: '<1|0 admits> <remaining> <retryAfter ms> <resetAfter ms> <rate /s or -> <delay ms or ->',
all separated by spaces, numbers as %.17g (inf for Infinity); then, for a block with a reason, a newline and the reason.
]]
local now, isWall = clock(ARGV[1])
local cost = tonumber(ARGV[2])
local count = #RULES
local key = KEYS[1]

local fields = redis.call('HMGET', key, 's', 'o')
local blob, ov = fields[1], fields[2]

-- The client's state: s (rule state, all zero when fresh) and L (the shared log).
local s
if blob and STATE_SIZE > 0 then
  s = { struct.unpack(STATE_FMT, blob) }
  s[STATE_SIZE + 1] = nil
else
  s = {}
  for k = 1, STATE_SIZE do s[k] = 0 end
end
local L
if HAS_LOG then L = Log.decode(blob, STATE_SIZE * 8 + 1) end

-- outcome — rule i's six reply fields from the state as stored after the decision.
local function outcome(out, r, admits, allowed, rate, delay)
  local remaining, retry, reset
  if r.log then
    remaining = r.remaining(r, L, now)
    retry = allowed and 0 or r.wait(r, L, now, cost)
    reset = r.reset_after(r, L, now)
  else
    remaining = r.remaining(r, s, now)
    retry = allowed and 0 or r.wait(r, s, now, cost)
    reset = r.reset_after(r, s, now)
  end
  out[#out + 1] = admits and '1' or '0'
  out[#out + 1] = fmt(remaining)
  out[#out + 1] = fmt(retry)
  out[#out + 1] = fmt(reset)
  out[#out + 1] = rate and fmt(rate) or '-'
  if delay then
    out[#out + 1] = allowed and fmt(delay) or '0'
  else
    out[#out + 1] = '-'
  end
end

-- A live block or exemption: peek (every rule at cost 0, nothing stored) and report. One that is over is dropped.
if ov then
  local sp = string.find(ov, ' ', 1, true)
  local nl = string.find(ov, '\n', sp + 1, true)
  local untilText = string.sub(ov, sp + 1, (nl or 0) - 1)
  if number(untilText) > now then
    cost = 0
    local out = { string.sub(ov, 1, 1), fmt(now), untilText }
    local n = {}
    for i = 1, count do
      local r = RULES[i]
      if r.log then
        outcome(out, r, r.admits(r, L, now, 0), true)
      else
        local ok, rate, delay = r.next(r, s, now, 0, n)
        outcome(out, r, ok, true, rate, delay)
      end
    end
    local reply = table.concat(out, ' ')
    if nl then reply = reply .. string.sub(ov, nl) end
    return reply
  end
  redis.call('HDEL', key, 'o', 'oe')
end

-- Every rule decides on the state before the request; n holds the state as charged.
local n = {}
local admits, rates, delays = {}, {}, {}
local allowed = true
for i = 1, count do
  local r = RULES[i]
  local ok
  if r.log then
    ok = r.admits(r, L, now, cost)
  else
    ok, rates[i], delays[i] = r.next(r, s, now, cost, n)
  end
  admits[i] = ok
  if not ok then allowed = false end
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

local out = { allowed and 'a' or 'd', fmt(now), '-' }
local fresh = 0
for i = 1, count do
  local r = RULES[i]
  outcome(out, r, admits[i], allowed, rates[i], delays[i])
  if changed then
    local f = r.fresh_in(r, r.log and L or s, now)
    if f > fresh then fresh = f end
  end
end

-- Store, to expire when the state decides as a fresh client's would: never earlier. (No live override here.)
if changed then
  if fresh > 0 then
    local value = STATE_SIZE > 0 and struct.pack(STATE_FMT, unpack(s)) or ''
    if HAS_LOG then value = value .. Log.encode(L) end
    local wallnow = isWall and now or wall()
    redis.call('HSET', key, 's', value, 'se', fmt(wallnow + fresh))
    redis.call('PEXPIRE', key, ceil(fresh))
  else
    redis.call('DEL', key)
  end
end
return table.concat(out, ' ')
