--[[
exponential.lua — the twin of src/core/algorithms/exponential.ts, Tony Finch's exponential limiter; a module of the
composed policy script (no KEYS or ARGV of its own). r: limit (cost units per period, also the burst), per (the
averaging period, ms), o (0-based offset in s); derived: slack — cost units. now in ms, cost in cost units.
State s[o+1..o+2]: r — the average rate, cost units per period; t — time of the last update, ms since the epoch.
]]
local exponential = {}

-- MIN_INTERVAL — Finch's clamp of the gap, in periods, so that two requests in one instant divide by no zero.
local MIN_INTERVAL = 1e-10

-- exponential.average — r after a gap of i periods from a stored average prev: (1 − e^(−i))·cost/i + e^(−i)·prev, at least cost.
function exponential.average(prev, i, cost)
  if i < MIN_INTERVAL then i = MIN_INTERVAL end
  local alpha = exp(-i)
  local v = (-expm1(-i) / i) * cost + alpha * prev
  if v > cost then return v end
  return cost
end

function exponential.next(r, s, now, cost, n)
  local t = s[r.o + 2]
  local v = exponential.average(s[r.o + 1], (now - t) / r.per, cost)
  n[r.o + 1] = v
  if now > t then n[r.o + 2] = now else n[r.o + 2] = t end
  return v <= r.limit + r.slack, (v * 1000) / r.per
end

-- exponential.decayed — the stored average forgotten down to now (what a zero-cost look sees).
function exponential.decayed(r, s, now)
  local gap = (now - s[r.o + 2]) / r.per
  if gap > 0 then return s[r.o + 1] * exp(-gap) end
  return s[r.o + 1]
end

function exponential.remaining(r, s, now)
  return floor_remaining(r.limit - exponential.decayed(r, s, now), r.slack)
end

-- exponential.slope — d/di of (1 − e^(−i))/i, by its series where the subtraction would cancel.
function exponential.slope(i, e)
  if i < 1e-3 then return -0.5 + i * (1 / 3 - i * (1 / 8 - i / 30)) end
  return (e * (1 + i) - 1) / (i * i)
end

-- exponential.wait — the exact gap i solving (1 − e^(−i))·cost/i + e^(−i)·r = limit, by Newton's method from
-- max(gap, ln(r/limit)) (from the left of the root of a falling convex function: it never overshoots).
function exponential.wait(r, s, now, cost)
  local limit, per = r.limit, r.per
  local rv, t = s[r.o + 1], s[r.o + 2]
  local i = (now - t) / per
  if exponential.average(rv, i, cost) <= limit + r.slack then return 0 end
  if cost > limit + r.slack then return INF end
  local finch = log(rv / limit)
  if i < finch then i = finch end
  if i < MIN_INTERVAL then i = MIN_INTERVAL end
  for _ = 1, 100 do
    local e = exp(-i)
    local f = (-expm1(-i) / i) * cost + e * rv - limit
    local df = cost * exponential.slope(i, e) - e * rv
    local step = f / df
    i = i - step
    if not (abs(step) > i * 1e-15) then break end
  end
  local w = t + i * per - now
  if w > 0 then return w end
  return 0
end

function exponential.reset_after(r, s, now)
  local v = exponential.decayed(r, s, now)
  local fl = r.limit * NEGLIGIBLE
  if v > fl then return r.per * log(v / fl) end
  return 0
end

-- exponential.fresh_in — reset_after counted from the last update when the clock stepped back behind it.
function exponential.fresh_in(r, s, now)
  local ahead = s[r.o + 2] - now
  if ahead > 0 then return exponential.reset_after(r, s, now) + ahead end
  return exponential.reset_after(r, s, now)
end

function exponential.new(r)
  r.size = 2
  r.slack = r.limit * (REL_SLACK + TIME_SLACK / r.per)
  r.next, r.remaining, r.wait, r.reset_after, r.fresh_in =
    exponential.next, exponential.remaining, exponential.wait, exponential.reset_after, exponential.fresh_in
  return r
end
