--[[
fixedWindow.lua — the twin of src/core/algorithms/fixedWindow.ts; a module of the composed policy script (no KEYS
or ARGV of its own). Every function takes r, the rule: limit (cost units), per (ms), o (its 0-based offset in the
state array s) and the derived slack (cost units); now is in ms and cost in cost units.
State s[o+1..o+2]: count — cost admitted in the window, cost units; start — the window's start, ms since the epoch.
]]
local fixedWindow = {}

-- fixedWindow.count — the window's count at now and its start (the stored window when the clock stepped back into an earlier one).
function fixedWindow.count(r, s, now)
  local per = r.per
  local w = floor(now / per) * per
  local start = s[r.o + 2]
  if w > start then return 0, w end
  return s[r.o + 1], start
end

function fixedWindow.next(r, s, now, cost, n)
  local count, start = fixedWindow.count(r, s, now)
  count = count + cost
  n[r.o + 1] = count
  n[r.o + 2] = start
  return count <= r.limit + r.slack
end

function fixedWindow.remaining(r, s, now)
  local count = fixedWindow.count(r, s, now)
  return floor_remaining(r.limit - count, r.slack)
end

function fixedWindow.wait(r, s, now, cost)
  local count, start = fixedWindow.count(r, s, now)
  if count + cost <= r.limit + r.slack then return 0 end
  if cost > r.limit + r.slack then return INF end
  return start + r.per - now
end

function fixedWindow.reset_after(r, s, now)
  local count, start = fixedWindow.count(r, s, now)
  if count > 0 then return start + r.per - now end
  return 0
end

-- fixedWindow.fresh_in — ms until the state decides as a fresh client's, counted from now even if the clock stepped back (the expiry).
fixedWindow.fresh_in = fixedWindow.reset_after

function fixedWindow.new(r)
  r.size = 2
  r.slack = r.limit * REL_SLACK
  r.next, r.remaining, r.wait, r.reset_after, r.fresh_in =
    fixedWindow.next, fixedWindow.remaining, fixedWindow.wait, fixedWindow.reset_after, fixedWindow.fresh_in
  return r
end
