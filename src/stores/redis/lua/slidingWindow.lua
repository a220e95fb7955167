--[[
slidingWindow_lua — the twin of src/core/algorithms/slidingWindow_ts (Cloudflare's sliding window counter); a module
of the composed policy script (no KEYS or ARGV of its own). r: limit (cost units), per (ms), o (0-based offset in s),
slack (cost units); now in ms, cost in cost units.
State s[o+1..o+3]: prev — the previous window's count, cost units; curr — the current window's count, cost units;
start — the current window's start, ms since the epoch.
]]

-- slidingWindow_roll — the windows moved to now: the weighted estimate (cost units), prev, curr, start and the
-- tolerance of the limit comparison (cost units: the slack plus what the estimate falls, prev/per per ms, in
-- TIME_SLACK). A clock that stepped back is weighed at the stored window's start (the strictest point).
local function slidingWindow_roll(r, s, now)
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

local function slidingWindow_next(r, s, now, cost, n)
  local estimate, prev, curr, start, tolerance = slidingWindow_roll(r, s, now)
  n[r.o + 1] = prev
  n[r.o + 2] = curr + cost
  n[r.o + 3] = start
  return estimate + cost <= r.limit + tolerance
end

local function slidingWindow_remaining(r, s, now)
  local estimate, _, _, _, tolerance = slidingWindow_roll(r, s, now)
  return floor_remaining(r.limit - estimate, tolerance)
end

-- slidingWindow_wait — within this window the estimate falls linearly as the previous window slides out; if that is
-- not enough, in the next window, where this window's count is the one sliding out.
local function slidingWindow_wait(r, s, now, cost)
  local limit, per = r.limit, r.per
  local estimate, prev, curr, start, tolerance = slidingWindow_roll(r, s, now)
  if estimate + cost <= limit + tolerance then return 0 end
  if cost > limit + r.slack then return INF end
  local room = limit - cost - curr
  if room >= 0 then return start + per * (1 - room / prev) - now end
  local x = per * (1 - (limit - cost) / curr)
  if not (x > 0) then x = 0 end
  return start + per + x - now
end

local function slidingWindow_reset_after(r, s, now)
  local _, prev, curr, start = slidingWindow_roll(r, s, now)
  if curr > 0 then return start + 2 * r.per - now end
  if prev > 0 then return start + r.per - now end
  return 0
end


-- slidingWindow.new — the rule, built in one constructor.
local function slidingWindow_new(c)
  return { o = c.o, limit = c.limit, per = c.per, burst = c.burst, strict = c.strict, size = 3, slack = c.limit * REL_SLACK,
    next = slidingWindow_next, remaining = slidingWindow_remaining, wait = slidingWindow_wait,
    reset_after = slidingWindow_reset_after }
end
local slidingWindow = { new = slidingWindow_new }
