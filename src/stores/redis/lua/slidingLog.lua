--[[
slidingLog_lua — the twin of src/core/algorithms/slidingLog_ts: the Log (requests oldest first, as times and running
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
local unpackd = struct.unpack

local function log_time(L, k) return (unpackd('<d', L.s, 9 + 16 * k)) end
local function log_cum(L, k)
  if k < 0 then return L.base end
  return (unpackd('<d', L.s, 17 + 16 * k))
end

-- log_first_after — index of the oldest entry with time > t (n when none).
local function log_first_after(L, t)
  if L.n == 0 or L.newest <= t then return L.n end
  local lo, hi = 0, L.n
  local s = L.s
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if unpackd('<d', s, 9 + 16 * mid) > t then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- log_first_reaching — index of the oldest entry whose running total is >= v (n when none).
local function log_first_reaching(L, v)
  local lo, hi = 0, L.n
  local s = L.s
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if unpackd('<d', s, 17 + 16 * mid) >= v then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- log_since — the cost filed after time t (the window (t, ∞)).
local function log_since(L, t)
  return L.total - log_cum(L, log_first_after(L, t) - 1)
end

-- log_push — files cost at now (into the newest entry when the clock stepped back or in the same ms).
local function log_push(L, now, cost)
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

-- log_trim — drops the entries no rule can look at again: those at or before `before`, and the oldest ones while
-- the newer entries already hold `enough`.
local function log_trim(L, before, enough)
  local total = L.total
  local drop = log_first_after(L, before)
  while drop < L.n and total - log_cum(L, drop) >= enough do drop = drop + 1 end
  if drop == 0 then return end
  local base = log_cum(L, drop - 1)
  L.n = L.n - drop
  if L.n == 0 then
    L.base, L.total, L.newest = 0, 0, -INF
    L.s = struct.pack('<d', 0)
    return
  end
  L.base = base
  L.s = struct.pack('<d', base) .. string.sub(L.s, 9 + 16 * drop)
end

-- log_decode — the log stored in blob from byte pos on; an empty log when absent.
local function log_decode(blob, pos)
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
local function log_encode(L)
  return L.s
end


-- slidingLog_used — cost in the window ending at now.
local function slidingLog_used(r, L, now)
  return log_since(L, now - r.per)
end

local function slidingLog_admits(r, L, now, cost)
  return slidingLog_used(r, L, now) + cost <= r.limit + r.slack
end

local function slidingLog_remaining(r, L, now)
  return floor_remaining(r.limit - slidingLog_used(r, L, now), r.slack)
end

-- slidingLog_wait — the entries slide out oldest first until the total before the window reaches total + cost − limit;
-- the last of them, entry k, leaves the window at time(k) + per.
local function slidingLog_wait(r, L, now, cost)
  if slidingLog_admits(r, L, now, cost) then return 0 end
  if cost > r.limit + r.slack then return INF end
  local k = log_first_reaching(L, L.total + cost - r.limit - r.slack)
  return log_time(L, k) + r.per - now
end

local function slidingLog_reset_after(r, L, now)
  if slidingLog_used(r, L, now) > 0 then return L.newest + r.per - now end
  return 0
end

-- slidingLog.new — the rule, built in one constructor.
local function slidingLog_new(c)
  return { limit = c.limit, per = c.per, strict = c.strict, log = true, size = 0, slack = c.limit * REL_SLACK,
    admits = slidingLog_admits, remaining = slidingLog_remaining, wait = slidingLog_wait,
    reset_after = slidingLog_reset_after }
end
local slidingLog = { new = slidingLog_new }
local Log = { decode = log_decode, push = log_push, trim = log_trim }
