--[[
common.lua — shared helpers of the composed policy script: the slack constants of src/core/algorithms/common.ts,
floor_remaining, an accurate expm1 (Redis runs Lua 5.1, which has none) and the lossless number format of replies.
A module: no KEYS or ARGV of its own (policy.lua reads them). Times are ms, costs are cost units.
The composer writes REL_SLACK (a fraction of the limit), TIME_SLACK (ms) and NEGLIGIBLE (a fraction of the limit)
before this file, from the values of src/core/algorithms/common.ts, so the twin cannot drift from the core.
]]
local INF = math.huge
local LN2 = 0.69314718055994530942
local floor, exp, log, abs, ceil = math.floor, math.exp, math.log, math.abs, math.ceil

-- floor_remaining — whole cost-1 requests that fit in room, never negative, forgiving float dust (floorRemaining).
local function floor_remaining(room, slack)
  local r = floor(room + slack)
  if r > 0 then return r end
  return 0
end

-- expm1 — e^x − 1 without the cancellation of exp(x) − 1 near 0: the Taylor series where |x| is tiny, Kahan's
-- (u − 1)·x / ln u with u = e^x up to |x| = 1 (the rounding errors of u − 1 and ln u cancel), exp(x) − 1 beyond.
local function expm1(x)
  local ax = abs(x)
  if ax < 1e-5 then return x + x * x / 2 + x * x * x / 6 + x * x * x * x / 24 end
  if ax < 1 then
    local u = exp(x)
    if u == 1 then return x end
    local um1 = u - 1
    if um1 == -1 then return -1 end
    return um1 * x / log(u)
  end
  return exp(x) - 1
end

-- fmt — a double as text that parses back to the same double (%.17g; integers short; inf, -inf, nan by name).
local function fmt(x)
  if x ~= x then return 'nan' end
  if x == INF then return 'inf' end
  if x == -INF then return '-inf' end
  if x == floor(x) and x > -1e15 and x < 1e15 then return string.format('%d', x) end
  return string.format('%.17g', x)
end

-- wall — the server's clock (TIME), ms since the epoch. Expiries are deadlines on this clock, whatever the check's now.
local function wall()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end

-- clock — the request's time, ms: ARGV's explicit now, or the server's TIME when it is '' (so that every app
-- server agrees); the second value says whether it is the server's clock.
local function clock(arg)
  if arg == '' then return wall(), true end
  return tonumber(arg), false
end
