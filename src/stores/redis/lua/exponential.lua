--[[
exponential_lua — the twin of src/core/algorithms/exponential_ts, Tony Finch's exponential limiter; a module of the
composed policy script (no KEYS or ARGV of its own). r: limit (cost units per period, also the burst), per (the
averaging period, ms), o (0-based offset in s); derived: slack — cost units. now in ms, cost in cost units.
State s[o+1..o+2]: r — the average rate, cost units per period; t — time of the last update, ms since the epoch.
]]

-- expm1 — e^x − 1 (Redis runs Lua 5.1, which has no math.expm1) without the cancellation of exp(x) − 1 near 0: the Taylor series where |x| is tiny, Kahan's
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

-- MIN_INTERVAL — Finch's clamp of the gap, in periods, so that two requests in one instant divide by no zero.
local MIN_INTERVAL = 1e-10

-- exponential_average — r after a gap of i periods from a stored average prev: (1 − e^(−i))·cost/i + e^(−i)·prev, at least cost.
local function exponential_average(prev, i, cost)
  if i < MIN_INTERVAL then i = MIN_INTERVAL end
  local alpha = exp(-i)
  local v = (-expm1(-i) / i) * cost + alpha * prev
  if v > cost then return v end
  return cost
end

local function exponential_next(r, s, now, cost, n)
  local t = s[r.o + 2]
  local v = exponential_average(s[r.o + 1], (now - t) / r.per, cost)
  n[r.o + 1] = v
  if now > t then n[r.o + 2] = now else n[r.o + 2] = t end
  return v <= r.limit + r.slack, (v * 1000) / r.per
end

-- exponential_decayed — the stored average forgotten down to now (what a zero-cost look sees).
local function exponential_decayed(r, s, now)
  local gap = (now - s[r.o + 2]) / r.per
  if gap > 0 then return s[r.o + 1] * exp(-gap) end
  return s[r.o + 1]
end

local function exponential_remaining(r, s, now)
  return floor_remaining(r.limit - exponential_decayed(r, s, now), r.slack)
end

-- exponential_slope — d/di of (1 − e^(−i))/i, by its series where the subtraction would cancel.
local function exponential_slope(i, e)
  if i < 1e-3 then return -0.5 + i * (1 / 3 - i * (1 / 8 - i / 30)) end
  return (e * (1 + i) - 1) / (i * i)
end

-- exponential_wait — the exact gap i solving (1 − e^(−i))·cost/i + e^(−i)·r = limit, by Newton's method from
-- max(gap, ln(r/limit)) (from the left of the root of a falling convex function: it never overshoots).
local function exponential_wait(r, s, now, cost)
  local limit, per = r.limit, r.per
  local rv, t = s[r.o + 1], s[r.o + 2]
  local i = (now - t) / per
  if exponential_average(rv, i, cost) <= limit + r.slack then return 0 end
  if cost > limit + r.slack then return INF end
  local finch = log(rv / limit)
  if i < finch then i = finch end
  if i < MIN_INTERVAL then i = MIN_INTERVAL end
  for _ = 1, 100 do
    local e = exp(-i)
    local f = (-expm1(-i) / i) * cost + e * rv - limit
    local df = cost * exponential_slope(i, e) - e * rv
    local step = f / df
    i = i - step
    if not (abs(step) > i * 1e-15) then break end
  end
  local w = t + i * per - now
  if w > 0 then return w end
  return 0
end

local function exponential_reset_after(r, s, now)
  local v = exponential_decayed(r, s, now)
  local fl = r.limit * NEGLIGIBLE
  if not (v > fl) then return 0 end
  local ahead = s[r.o + 2] - now -- the clock stepped back behind the stored time: the decay only starts there
  if not (ahead > 0) then ahead = 0 end
  return ahead + r.per * log(v / fl)
end

-- exponential.new — the rule, built in one constructor.
local function exponential_new(c)
  return { o = c.o, limit = c.limit, per = c.per, burst = c.burst, strict = c.strict, size = 2, slack = c.limit * (REL_SLACK + TIME_SLACK / c.per),
    next = exponential_next, remaining = exponential_remaining, wait = exponential_wait,
    reset_after = exponential_reset_after }
end
local exponential = { new = exponential_new }
