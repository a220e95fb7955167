--[[
tokenBucket.lua — the twin of src/core/algorithms/tokenBucket.ts: the token bucket and the leaky bucket (a meter that
admits exactly what the token bucket admits and also reports delay); a module of the composed policy script (no
KEYS or ARGV of its own). r: limit (cost units), per (ms), burst (cost units), o (0-based offset in s); derived:
perMs — refill rate, cost units per ms; slack — cost units. now in ms, cost in cost units.
State s[o+1..o+2]: debt — tokens missing from a full bucket (the leaky bucket's level), cost units; t — time of the
last update, ms since the epoch.
]]
local tokenBucket = {}

-- tokenBucket.debt — the debt at now, after the refill since the last update (none when the clock stepped back).
function tokenBucket.debt(r, s, now)
  local elapsed = now - s[r.o + 2]
  local d = s[r.o + 1]
  if elapsed > 0 then d = d - elapsed * r.perMs end
  if d > 0 then return d end
  return 0
end

function tokenBucket.next(r, s, now, cost, n)
  local d = tokenBucket.debt(r, s, now)
  local t = s[r.o + 2]
  n[r.o + 1] = d + cost
  if now > t then n[r.o + 2] = now else n[r.o + 2] = t end
  return d + cost <= r.burst + r.slack
end

-- tokenBucket.leaky_next — the leaky bucket's next: also the delay, ms to hold the request for smooth output (the queue ahead of it).
function tokenBucket.leaky_next(r, s, now, cost, n)
  local ok = tokenBucket.next(r, s, now, cost, n)
  return ok, nil, (n[r.o + 1] - cost) / r.perMs
end

function tokenBucket.remaining(r, s, now)
  return floor_remaining(r.burst - tokenBucket.debt(r, s, now), r.slack)
end

function tokenBucket.wait(r, s, now, cost)
  local burst = r.burst
  local over = tokenBucket.debt(r, s, now) + cost - burst
  if over <= r.slack then return 0 end
  if cost > burst + r.slack then return INF end
  return over / r.perMs
end

function tokenBucket.reset_after(r, s, now)
  return tokenBucket.debt(r, s, now) / r.perMs
end

-- tokenBucket.fresh_in — reset_after counted from the last update when the clock stepped back behind it.
function tokenBucket.fresh_in(r, s, now)
  local ahead = s[r.o + 2] - now
  if ahead > 0 then return tokenBucket.reset_after(r, s, now) + ahead end
  return tokenBucket.reset_after(r, s, now)
end

function tokenBucket.new(r)
  r.size = 2
  r.perMs = r.limit / r.per
  r.slack = r.burst * REL_SLACK + r.perMs * TIME_SLACK
  r.next, r.remaining, r.wait, r.reset_after, r.fresh_in =
    tokenBucket.next, tokenBucket.remaining, tokenBucket.wait, tokenBucket.reset_after, tokenBucket.fresh_in
  return r
end
