--[[
slidingWindow.lua — the twin of src/core/algorithms/slidingWindow.ts (Cloudflare's sliding window counter); a module
of the composed policy script (no KEYS or ARGV of its own). r: limit (cost units), per (ms), o (0-based offset in s),
slack (cost units); now in ms, cost in cost units.
State s[o+1..o+3]: prev — the previous window's count, cost units; curr — the current window's count, cost units;
start — the current window's start, ms since the epoch.
]]
local slidingWindow = {}

-- slidingWindow.roll — the windows moved to now: the weighted estimate (cost units), prev, curr, start and the
-- tolerance of the limit comparison (cost units: the slack plus what the estimate falls, prev/per per ms, in
-- TIME_SLACK). A clock that stepped back is weighed at the stored window's start (the strictest point).
function slidingWindow.roll(r, s, now)
  local per, o = r.per, r.o
  local w = floor(now / per) * per
  local prev, curr, start = s[o + 1], s[o + 2], s[o + 3]
  if w > start then
    if w == start + per then prev = curr else prev = 0 end
    curr = 0
    start = w
  elseif now < start then
    now = start
  end
  local tolerance = r.slack + (prev / per) * TIME_SLACK
  return prev * (1 - (now - start) / per) + curr, prev, curr, start, tolerance
end

function slidingWindow.next(r, s, now, cost, n)
  local estimate, prev, curr, start, tolerance = slidingWindow.roll(r, s, now)
  n[r.o + 1] = prev
  n[r.o + 2] = curr + cost
  n[r.o + 3] = start
  return estimate + cost <= r.limit + tolerance
end

function slidingWindow.remaining(r, s, now)
  local estimate, _, _, _, tolerance = slidingWindow.roll(r, s, now)
  return floor_remaining(r.limit - estimate, tolerance)
end

-- slidingWindow.wait — within this window the estimate falls linearly as the previous window slides out; if that is
-- not enough, in the next window, where this window's count is the one sliding out.
function slidingWindow.wait(r, s, now, cost)
  local limit, per = r.limit, r.per
  local estimate, prev, curr, start, tolerance = slidingWindow.roll(r, s, now)
  if estimate + cost <= limit + tolerance then return 0 end
  if cost > limit + r.slack then return INF end
  local room = limit - cost - curr
  if room >= 0 then return start + per * (1 - room / prev) - now end
  local x = per * (1 - (limit - cost) / curr)
  if not (x > 0) then x = 0 end
  return start + per + x - now
end

function slidingWindow.reset_after(r, s, now)
  local _, prev, curr, start = slidingWindow.roll(r, s, now)
  if curr > 0 then return start + 2 * r.per - now end
  if prev > 0 then return start + r.per - now end
  return 0
end

slidingWindow.fresh_in = slidingWindow.reset_after

function slidingWindow.new(r)
  r.size = 3
  r.slack = r.limit * REL_SLACK
  r.next, r.remaining, r.wait, r.reset_after, r.fresh_in =
    slidingWindow.next, slidingWindow.remaining, slidingWindow.wait, slidingWindow.reset_after, slidingWindow.fresh_in
  return r
end
