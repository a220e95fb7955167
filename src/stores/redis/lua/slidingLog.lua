--[[
slidingLog.lua — the twin of src/core/algorithms/slidingLog.ts: the Log (requests oldest first, as times and running
cost totals, so that the cost in any window is a difference of two totals found by binary search) and the SlidingLog
rule over it. Every slidingLog rule of a policy reads the one shared log. A module of the composed policy script
(no KEYS or ARGV of its own; policy.lua reads and writes the log as part of the client's state string).
Log L: base — the running total before the oldest entry, cost units; n — entries; t[k], c[k] (k = 1..n) — entry
times (ms since the epoch, never decreasing) and running totals through the entry (cost units).
Functions below index entries from 0 like the TypeScript (entry k is t[k+1], c[k+1]; cum(−1) is the base).
Rule r: limit (cost units), per (ms), slack (cost units); now in ms, cost in cost units.
]]
local Log = {}

function Log.time(L, k) return L.t[k + 1] end
function Log.cum(L, k)
  if k < 0 then return L.base end
  return L.c[k + 1]
end
function Log.total(L) return Log.cum(L, L.n - 1) end
function Log.newest(L)
  if L.n > 0 then return L.t[L.n] end
  return -INF
end

-- Log.first_after — index of the oldest entry with time > t (n when none).
function Log.first_after(L, t)
  local lo, hi = 0, L.n
  local times = L.t
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if times[mid + 1] > t then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- Log.first_reaching — index of the oldest entry whose running total is >= v (n when none).
function Log.first_reaching(L, v)
  local lo, hi = 0, L.n
  local cums = L.c
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if cums[mid + 1] >= v then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- Log.since — the cost filed after time t (the window (t, ∞)).
function Log.since(L, t)
  return Log.total(L) - Log.cum(L, Log.first_after(L, t) - 1)
end

-- Log.push — files cost at now (into the newest entry when the clock stepped back or in the same ms).
function Log.push(L, now, cost)
  local total = Log.total(L)
  if L.n > 0 and now <= L.t[L.n] then
    L.c[L.n] = total + cost
    return
  end
  L.n = L.n + 1
  L.t[L.n] = now
  L.c[L.n] = total + cost
end

-- Log.trim — drops the entries no rule can look at again: those at or before `before`, and the oldest ones while
-- the newer entries already hold `enough`.
function Log.trim(L, before, enough)
  local total = Log.total(L)
  local drop = Log.first_after(L, before)
  while drop < L.n and total - Log.cum(L, drop) >= enough do drop = drop + 1 end
  if drop == 0 then return end
  L.base = Log.cum(L, drop - 1)
  local t, c = {}, {}
  for k = drop + 1, L.n do
    t[k - drop] = L.t[k]
    c[k - drop] = L.c[k]
  end
  L.t, L.c = t, c
  L.n = L.n - drop
  if L.n == 0 then L.base = 0 end
end

-- Log.decode — the log stored in blob from byte pos on: base, then (time, total) pairs; an empty log when absent.
function Log.decode(blob, pos)
  local L = { base = 0, n = 0, t = {}, c = {} }
  if not blob or #blob < pos + 7 then return L end
  L.base = struct.unpack('<d', blob, pos)
  pos = pos + 8
  local n = (#blob - pos + 1) / 16
  local k = 0
  while k < n do
    local m = n - k
    if m > 256 then m = 256 end
    local v = { struct.unpack('<' .. string.rep('d', 2 * m), blob, pos) }
    for j = 1, m do
      L.t[k + j] = v[2 * j - 1]
      L.c[k + j] = v[2 * j]
    end
    k = k + m
    pos = pos + 16 * m
  end
  L.n = n
  return L
end

-- Log.encode — the log as stored: base, then the (time, total) pairs, as little-endian doubles.
function Log.encode(L)
  local parts = { struct.pack('<d', L.base) }
  local k = 0
  while k < L.n do
    local m = L.n - k
    if m > 256 then m = 256 end
    local v = {}
    for j = 1, m do
      v[2 * j - 1] = L.t[k + j]
      v[2 * j] = L.c[k + j]
    end
    parts[#parts + 1] = struct.pack('<' .. string.rep('d', 2 * m), unpack(v))
    k = k + m
  end
  return table.concat(parts)
end

local slidingLog = {}

-- slidingLog.used — cost in the window ending at now.
function slidingLog.used(r, L, now)
  return Log.since(L, now - r.per)
end

function slidingLog.admits(r, L, now, cost)
  return slidingLog.used(r, L, now) + cost <= r.limit + r.slack
end

function slidingLog.remaining(r, L, now)
  return floor_remaining(r.limit - slidingLog.used(r, L, now), r.slack)
end

-- slidingLog.wait — the entries slide out oldest first until the total before the window reaches total + cost − limit;
-- the last of them, entry k, leaves the window at time(k) + per.
function slidingLog.wait(r, L, now, cost)
  if slidingLog.admits(r, L, now, cost) then return 0 end
  if cost > r.limit + r.slack then return INF end
  local k = Log.first_reaching(L, Log.total(L) + cost - r.limit - r.slack)
  return Log.time(L, k) + r.per - now
end

function slidingLog.reset_after(r, L, now)
  if slidingLog.used(r, L, now) > 0 then return Log.newest(L) + r.per - now end
  return 0
end

function slidingLog.new(r)
  r.log = true
  r.size = 0
  r.slack = r.limit * REL_SLACK
  r.admits, r.remaining, r.wait, r.reset_after, r.fresh_in =
    slidingLog.admits, slidingLog.remaining, slidingLog.wait, slidingLog.reset_after, slidingLog.reset_after
  return r
end
