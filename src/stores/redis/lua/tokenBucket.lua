--[[
tokenBucket_lua — the twin of src/core/algorithms/tokenBucket_ts: the token bucket and the leaky bucket (a meter that
admits exactly what the token bucket admits and also reports delay); a module of the composed policy script (no
KEYS or ARGV of its own). r: limit (cost units), per (ms), burst (cost units), o (0-based offset in s); derived:
perMs — refill rate, cost units per ms; slack — cost units. now in ms, cost in cost units.
State s[o+1..o+2]: debt — tokens missing from a full bucket (the leaky bucket's level), cost units; t — time of the
last update, ms since the epoch.
]]

-- tokenBucket_debt — the debt at now, after the refill since the last update (none when the clock stepped back).
local function tokenBucket_debt(r, s, now)
  local elapsed = now - s[r.o + 2]
  local d = s[r.o + 1]
  if elapsed > 0 then d = d - elapsed * r.perMs end
  if d > 0 then return d end
  return 0
end

-- tokenBucket_lag — ms from now until the stored update time when the clock stepped back behind it: the refill
-- only starts there, so every wait counts from it.
local function tokenBucket_lag(r, s, now)
  local ahead = s[r.o + 2] - now
  if ahead > 0 then return ahead end
  return 0
end

local function tokenBucket_next(r, s, now, cost, n)
  local d = tokenBucket_debt(r, s, now)
  local t = s[r.o + 2]
  n[r.o + 1] = d + cost
  if now > t then n[r.o + 2] = now else n[r.o + 2] = t end
  return d + cost <= r.burst + r.slack
end

-- tokenBucket_leaky_next — the leaky bucket's next: also the delay, ms to hold the request for smooth output (the
-- queue ahead of it, drained from the stored time on when the clock stepped back behind it).
local function tokenBucket_leaky_next(r, s, now, cost, n)
  local ok = tokenBucket_next(r, s, now, cost, n)
  local ahead = n[r.o + 1] - cost
  if ahead > 0 then return ok, nil, tokenBucket_lag(r, s, now) + ahead / r.perMs end
  return ok, nil, 0
end

local function tokenBucket_remaining(r, s, now)
  return floor_remaining(r.burst - tokenBucket_debt(r, s, now), r.slack)
end

local function tokenBucket_wait(r, s, now, cost)
  local burst = r.burst
  local over = tokenBucket_debt(r, s, now) + cost - burst
  if over <= r.slack then return 0 end
  if cost > burst + r.slack then return INF end
  return tokenBucket_lag(r, s, now) + over / r.perMs
end

local function tokenBucket_reset_after(r, s, now)
  local d = tokenBucket_debt(r, s, now)
  if d > 0 then return tokenBucket_lag(r, s, now) + d / r.perMs end
  return 0
end

-- tokenBucket.new — the rule, built in one constructor; leaky — the leaky bucket's (next also reports delay).
local function tokenBucket_new(c, leaky)
  local perMs = c.limit / c.per
  return { o = c.o, limit = c.limit, per = c.per, burst = c.burst, strict = c.strict, size = 2, perMs = perMs, slack = c.burst * REL_SLACK + perMs * TIME_SLACK,
    next = leaky and tokenBucket_leaky_next or tokenBucket_next, remaining = tokenBucket_remaining, wait = tokenBucket_wait,
    reset_after = tokenBucket_reset_after }
end
local tokenBucket = { new = tokenBucket_new }
