--[[
earrrl.lua — the twin of src/core/algorithms/earrrl.ts (CEWMA of the request rate: every request an impulse, the
history folded into one equivalent impulse N at the time T of the last request); a module of the composed policy
script (no KEYS or ARGV of its own). r: limit (cost units), per (ms), halfLife (ms), o (0-based offset in s);
derived: lambda — ln 2 / halfLife, per ms; threshold — limit/per, cost units per ms; slack — cost units per ms.
now in ms, cost in cost units.
State s[o+1..o+2]: n — the equivalent impulse, cost units; t — time of the last update, ms since the epoch.
]]
local earrrl = {}

-- earrrl.decayed — the equivalent impulse moved to now: N·e^(−λ(now − T)) (undecayed when the clock stepped back).
function earrrl.decayed(r, s, now)
  local age = now - s[r.o + 2]
  if age > 0 then return s[r.o + 1] * exp(-r.lambda * age) end
  return s[r.o + 1]
end

-- earrrl.next — decides on the estimate before this request, whatever its cost; also returns the rate per second.
function earrrl.next(r, s, now, cost, n)
  local d = earrrl.decayed(r, s, now)
  local estimate = d * r.lambda
  local t = s[r.o + 2]
  n[r.o + 1] = cost + d
  if now > t then n[r.o + 2] = now else n[r.o + 2] = t end
  return estimate <= r.threshold + r.slack, estimate * 1000
end

function earrrl.remaining(r, s, now)
  return floor_remaining(r.threshold / r.lambda - earrrl.decayed(r, s, now) + 1, r.slack / r.lambda)
end

function earrrl.wait(r, s, now)
  local estimate = earrrl.decayed(r, s, now) * r.lambda
  if estimate <= r.threshold + r.slack then return 0 end
  return log(estimate / r.threshold) / r.lambda
end

function earrrl.reset_after(r, s, now)
  local estimate = earrrl.decayed(r, s, now) * r.lambda
  local fl = r.threshold * NEGLIGIBLE
  if estimate > fl then return log(estimate / fl) / r.lambda end
  return 0
end

-- earrrl.fresh_in — reset_after counted from T when the clock stepped back behind it.
function earrrl.fresh_in(r, s, now)
  local ahead = s[r.o + 2] - now
  if ahead > 0 then return earrrl.reset_after(r, s, now) + ahead end
  return earrrl.reset_after(r, s, now)
end

function earrrl.new(r)
  r.size = 2
  r.lambda = LN2 / r.halfLife
  r.threshold = r.limit / r.per
  r.slack = r.threshold * (REL_SLACK + r.lambda * TIME_SLACK)
  r.next, r.remaining, r.wait, r.reset_after, r.fresh_in = earrrl.next, earrrl.remaining, earrrl.wait, earrrl.reset_after, earrrl.fresh_in
  return r
end
