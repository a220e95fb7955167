--[[
gcra.lua — the twin of src/core/algorithms/gcra.ts, the generic cell rate algorithm; a module of the composed policy
script (no KEYS or ARGV of its own). r: limit (cost units), per (ms), burst (cost units), o (0-based offset in s);
derived: interval — the emission interval T, ms per cost unit; tolerance — τ = burst·T, ms; slack — ms.
now in ms, cost in cost units.
State s[o+1]: tat — the theoretical arrival time, ms since the epoch.
]]
local gcra = {}

function gcra.next(r, s, now, cost, n)
  local tat = s[r.o + 1]
  if not (tat > now) then tat = now end
  local newTat = tat + cost * r.interval
  n[r.o + 1] = newTat
  return newTat - now <= r.tolerance + r.slack
end

function gcra.remaining(r, s, now)
  local ahead = s[r.o + 1] - now
  if not (ahead > 0) then ahead = 0 end
  return floor_remaining((r.tolerance - ahead) / r.interval, r.slack / r.interval)
end

function gcra.wait(r, s, now, cost)
  local increment = cost * r.interval
  local tat = s[r.o + 1]
  if not (tat > now) then tat = now end
  local over = tat + increment - r.tolerance - now
  if over <= r.slack then return 0 end
  if increment > r.tolerance + r.slack then return INF end
  return over
end

function gcra.reset_after(r, s, now)
  local tat = s[r.o + 1]
  if tat > now then return tat - now end
  return 0
end

gcra.fresh_in = gcra.reset_after

function gcra.new(r)
  r.size = 1
  r.interval = r.per / r.limit
  r.tolerance = r.burst * r.interval
  r.slack = r.tolerance * REL_SLACK + TIME_SLACK
  r.next, r.remaining, r.wait, r.reset_after, r.fresh_in = gcra.next, gcra.remaining, gcra.wait, gcra.reset_after, gcra.fresh_in
  return r
end
