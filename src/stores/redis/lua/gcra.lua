--[[
gcra_lua — the twin of src/core/algorithms/gcra_ts, the generic cell rate algorithm; a module of the composed policy
script (no KEYS or ARGV of its own). r: limit (cost units), per (ms), burst (cost units), o (0-based offset in s);
derived: interval — the emission interval T, ms per cost unit; tolerance — τ = burst·T, ms; slack — ms.
now in ms, cost in cost units.
State s[o+1]: tat — the theoretical arrival time, ms since the epoch.
]]

local function gcra_next(r, s, now, cost, n)
  local tat = s[r.o + 1]
  if not (tat > now) then tat = now end
  local newTat = tat + cost * r.interval
  n[r.o + 1] = newTat
  return newTat - now <= r.tolerance + r.slack
end

local function gcra_remaining(r, s, now)
  local ahead = s[r.o + 1] - now
  if not (ahead > 0) then ahead = 0 end
  return floor_remaining((r.tolerance - ahead) / r.interval, r.slack / r.interval)
end

local function gcra_wait(r, s, now, cost)
  local increment = cost * r.interval
  local tat = s[r.o + 1]
  if not (tat > now) then tat = now end
  local over = tat + increment - r.tolerance - now
  if over <= r.slack then return 0 end
  if increment > r.tolerance + r.slack then return INF end
  return over
end

local function gcra_reset_after(r, s, now)
  local tat = s[r.o + 1]
  if tat > now then return tat - now end
  return 0
end


-- gcra.new — the rule, built in one constructor.
local function gcra_new(c)
  local interval = c.per / c.limit
  local tolerance = c.burst * interval
  return { o = c.o, limit = c.limit, per = c.per, burst = c.burst, strict = c.strict, size = 1, interval = interval, tolerance = tolerance,
    slack = tolerance * REL_SLACK + TIME_SLACK,
    next = gcra_next, remaining = gcra_remaining, wait = gcra_wait, reset_after = gcra_reset_after }
end
local gcra = { new = gcra_new }
