--[[
earrrl_lua — the twin of src/core/algorithms/earrrl_ts (CEWMA of the request rate: every request an impulse, the
history folded into one equivalent impulse N at the time T of the last request); a module of the composed policy
script (no KEYS or ARGV of its own). r: limit (cost units), per (ms), halfLife (ms), o (0-based offset in s);
derived: lambda — ln 2 / halfLife, per ms; threshold — limit/per, cost units per ms; slack — cost units per ms.
now in ms, cost in cost units.
State s[o+1..o+2]: n — the equivalent impulse, cost units; t — time of the last update, ms since the epoch.
]]

-- earrrl_decayed — the equivalent impulse moved to now: N·e^(−λ(now − T)) (undecayed when the clock stepped back).
local function earrrl_decayed(r, s, now)
  local age = now - s[r.o + 2]
  if age > 0 then return s[r.o + 1] * exp(-r.lambda * age) end
  return s[r.o + 1]
end

-- earrrl_next — decides on the estimate before this request, whatever its cost; also returns the rate per second.
local function earrrl_next(r, s, now, cost, n)
  local d = earrrl_decayed(r, s, now)
  local estimate = d * r.lambda
  local t = s[r.o + 2]
  n[r.o + 1] = cost + d
  if now > t then n[r.o + 2] = now else n[r.o + 2] = t end
  return estimate <= r.threshold + r.slack, estimate * 1000
end

local function earrrl_remaining(r, s, now)
  return floor_remaining(r.threshold / r.lambda - earrrl_decayed(r, s, now) + 1, r.slack / r.lambda)
end

-- earrrl_lag — ms until the stored time T when the clock stepped back behind it: the decay only starts there.
local function earrrl_lag(r, s, now)
  local ahead = s[r.o + 2] - now
  if ahead > 0 then return ahead end
  return 0
end

local function earrrl_wait(r, s, now)
  local estimate = earrrl_decayed(r, s, now) * r.lambda
  if estimate <= r.threshold + r.slack then return 0 end
  return earrrl_lag(r, s, now) + log(estimate / r.threshold) / r.lambda
end

local function earrrl_reset_after(r, s, now)
  local estimate = earrrl_decayed(r, s, now) * r.lambda
  local fl = r.threshold * NEGLIGIBLE
  if estimate > fl then return earrrl_lag(r, s, now) + log(estimate / fl) / r.lambda end
  return 0
end

-- earrrl.new — the rule, built in one constructor.
local function earrrl_new(c)
  local lambda = LN2 / c.halfLife
  local threshold = c.limit / c.per
  return { o = c.o, limit = c.limit, per = c.per, burst = c.burst, strict = c.strict, size = 2, lambda = lambda, threshold = threshold,
    slack = threshold * (REL_SLACK + lambda * TIME_SLACK),
    next = earrrl_next, remaining = earrrl_remaining, wait = earrrl_wait, reset_after = earrrl_reset_after }
end
local earrrl = { new = earrrl_new }
