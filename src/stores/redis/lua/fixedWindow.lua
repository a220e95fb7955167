--[[
fixedWindow_lua — the twin of src/core/algorithms/fixedWindow_ts; a module of the composed policy script (no KEYS
or ARGV of its own). Every function takes r, the rule: limit (cost units), per (ms), o (its 0-based offset in the
state array s) and the derived slack (cost units); now is in ms and cost in cost units.
State s[o+1..o+2]: count — cost admitted in the window, cost units; start — the window's start, ms since the epoch.
]]

-- fixedWindow_count — the window's count at now and its start (the stored window when the clock stepped back into an earlier one).
local function fixedWindow_count(r, s, now)
  local per = r.per
  local w = floor(now / per) * per
  local start = s[r.o + 2]
  if w > start then return 0, w end
  return s[r.o + 1], start
end

local function fixedWindow_next(r, s, now, cost, n)
  local count, start = fixedWindow_count(r, s, now)
  count = count + cost
  n[r.o + 1] = count
  n[r.o + 2] = start
  return count <= r.limit + r.slack
end

local function fixedWindow_remaining(r, s, now)
  local count = fixedWindow_count(r, s, now)
  return floor_remaining(r.limit - count, r.slack)
end

local function fixedWindow_wait(r, s, now, cost)
  local count, start = fixedWindow_count(r, s, now)
  if count + cost <= r.limit + r.slack then return 0 end
  if cost > r.limit + r.slack then return INF end
  return start + r.per - now
end

local function fixedWindow_reset_after(r, s, now)
  local count, start = fixedWindow_count(r, s, now)
  if count > 0 then return start + r.per - now end
  return 0
end

-- fixedWindow.new — the rule, built in one constructor (Lua 5.1 would rehash a table grown field by field).
local function fixedWindow_new(c)
  return { o = c.o, limit = c.limit, per = c.per, burst = c.burst, strict = c.strict, size = 2, slack = c.limit * REL_SLACK,
    next = fixedWindow_next, remaining = fixedWindow_remaining, wait = fixedWindow_wait,
    reset_after = fixedWindow_reset_after }
end
local fixedWindow = { new = fixedWindow_new }
