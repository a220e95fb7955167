--[[
common.lua — shared helpers of the small scripts (override.lua, unoverride.lua, reset.lua): the clock. The check
itself (policy.lua) is written straight-line per policy and reads the clock inline the same way.
A module: no KEYS or ARGV of its own. Times are ms. The composer writes REL_SLACK (a fraction of the limit),
TIME_SLACK (ms) and NEGLIGIBLE (a fraction of the limit) before this file, from src/core/algorithms/common.ts.
]]
local INF = math.huge
local ceil = math.ceil

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
