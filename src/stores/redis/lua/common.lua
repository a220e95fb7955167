--[[
common.lua — shared helpers of the composed policy script: the slack constants of src/core/algorithms/common.ts,
floor_remaining and the clock.
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
