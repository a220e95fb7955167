--[[
slidingLog.lua — the twin of src/core/algorithms/slidingLog.ts: the Log (requests oldest first, as times and running
cost totals, so that the cost in any window is a difference of two totals found by binary search) and the SlidingLog
rule over it. Every slidingLog rule of a policy reads the one shared log. A module of the composed policy script
(no KEYS or ARGV of its own; policy.lua reads and writes the log as part of the client's state string).
Log L: s — the stored log, little-endian doubles: base (the running total before the oldest entry, cost units), then
(time, ms since the epoch, never decreasing; running total through the entry, cost units) pairs; n — entries;
base, total (cost units) and newest (ms) are kept decoded. Entries are read in place by binary search, so a check
costs O(log n) reads and one copy of the string, whatever the log's length.
Functions below index entries from 0 like the TypeScript (cum(−1) is the base).
Rule r: limit (cost units), per (ms), slack (cost units); now in ms, cost in cost units.
]]
local Log = {}
local unpackd = struct.unpack

function Log.time(L, k) return (unpackd('<d', L.s, 9 + 16 * k)) end
function Log.cum(L, k)
  if k < 0 then return L.base end
  return (unpackd('<d', L.s, 17 + 16 * k))
end

-- Log.first_after — index of the oldest entry with time > t (n when none).
function Log.first_after(L, t)
  if L.n == 0 or L.newest <= t then return L.n end
  local lo, hi = 0, L.n
  local s = L.s
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if unpackd('<d', s, 9 + 16 * mid) > t then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- Log.first_reaching — index of the oldest entry whose running total is >= v (n when none).
function Log.first_reaching(L, v)
  local lo, hi = 0, L.n
  local s = L.s
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if unpackd('<d', s, 17 + 16 * mid) >= v then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- Log.since — the cost filed after time t (the window (t, ∞)).
function Log.since(L, t)
  return L.total - Log.cum(L, Log.first_after(L, t) - 1)
end

-- Log.push — files cost at now (into the newest entry when the clock stepped back or in the same ms).
function Log.push(L, now, cost)
  local total = L.total + cost
  if L.n > 0 and now <= L.newest then
    L.s = string.sub(L.s, 1, #L.s - 8) .. struct.pack('<d', total)
  else
    L.s = L.s .. struct.pack('<dd', now, total)
    L.n = L.n + 1
    L.newest = now
  end
  L.total = total
end

-- Log.trim — drops the entries no rule can look at again: those at or before `before`, and the oldest ones while
-- the newer entries already hold `enough`.
function Log.trim(L, before, enough)
  local total = L.total
  local drop = Log.first_after(L, before)
  while drop < L.n and total - Log.cum(L, drop) >= enough do drop = drop + 1 end
  if drop == 0 then return end
  local base = Log.cum(L, drop - 1)
  L.n = L.n - drop
  if L.n == 0 then
    L.base, L.total, L.newest = 0, 0, -INF
    L.s = struct.pack('<d', 0)
    return
  end
  L.base = base
  L.s = struct.pack('<d', base) .. string.sub(L.s, 9 + 16 * drop)
end

-- Log.decode — the log stored in blob from byte pos on; an empty log when absent.
function Log.decode(blob, pos)
  if not blob or #blob < pos + 7 then
    return { s = struct.pack('<d', 0), n = 0, base = 0, total = 0, newest = -INF }
  end
  local s = string.sub(blob, pos)
  local n = (#s - 8) / 16
  local L = { s = s, n = n, base = (unpackd('<d', s, 1)) }
  if n > 0 then
    L.newest, L.total = unpackd('<dd', s, #s - 15)
  else
    L.newest, L.total = -INF, L.base
  end
  return L
end

-- Log.encode — the log as stored.
function Log.encode(L)
  return L.s
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
  local k = Log.first_reaching(L, L.total + cost - r.limit - r.slack)
  return Log.time(L, k) + r.per - now
end

function slidingLog.reset_after(r, L, now)
  if slidingLog.used(r, L, now) > 0 then return L.newest + r.per - now end
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
