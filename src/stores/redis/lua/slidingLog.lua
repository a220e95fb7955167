--[[
slidingLog.lua — the twin of src/core/algorithms/slidingLog.ts: the shared Log (requests oldest first, as times and
running cost totals, so that the cost in any window is a difference of two totals found by binary search) and the
SlidingLog rule over it, as code templates that the composer (src/stores/redis/scripts.ts) pastes into the one
straight-line script of a policy. No KEYS or ARGV of its own: the log is the tail of the client's value, which the
policy script (policy.lua) reads and writes. Each `--@@ name` line starts a template; `@name(a, b)` pastes template
`name` with $1 = a, $2 = b.

The log, as policy locals: L, from byte LB + 1 on — little-endian doubles: base (the running total before the oldest
entry, cost units), then (time, ms since the epoch, never decreasing; running total through the entry, cost units)
pairs; ln — entries; lbase, ltotal (cost units) and lnewest (ms, −INF when empty) kept decoded; lcharged — whether
this check filed a request. Entries are read in place by binary search (O(log n) reads), in the client's value itself
until a request is filed (L = v, LB = where the log starts, so a check that files nothing copies nothing; one that
files a request writes the log once, as a new string); entries are indexed from 0 like the TypeScript.
Placeholders, replaced at attach time (constants as exact numeric literals):
  $OK, $USED — decide: whether this rule admits the request; the cost in its window before it (report reuses it
               when nothing was filed)
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $LIMIT     — cost units per window;  $PER — the window, ms;  $SLACK — countSlack(limit);  $LIM_SLACK — limit + slack
  $LOG_PER, $LOG_LIMIT — the longest period (ms) and largest limit (cost units) of the policy's slidingLog rules:
               what the trimmed log must still hold
Policy locals used: v (the client's value), now (ms), cost (cost units), allowed, floor, pack, unpack, sub, INF.
]]

--@@ read
-- the log stored in the value v from byte $1 on, read in place; an empty log when absent
lcharged = false
if v and #v >= $1 + 7 then
  L, LB = v, $1 - 1
  ln = (#v - LB - 8) / 16
  lbase = unpack('<d', v, $1)
  if ln > 0 then lnewest, ltotal = unpack('<dd', v, #v - 15) else lnewest, ltotal = -INF, lbase end
else
  L, LB, ln, lbase, ltotal, lnewest = pack('<d', 0), 0, 0, 0, 0, -INF
end

--@@ first_after
-- $1 = the index of the oldest entry with time > $2 (ln when none).
if ln > 0 and lnewest <= $2 then
  $1 = ln
else
  @gallop($1, 9, $2, 0)
end

--@@ gallop
-- $1 = the index of the oldest entry whose field at byte $2 of its 16 (9: the time, 17: the running total) is over
-- $3 ($4 = 0) or at least $3 ($4 = 1); ln when none. A galloping search from the oldest entry: the log is trimmed to
-- the longest window at every filing, so the entries that left a window, and those that must slide out before a
-- retry, are few and at the front (O(log k) reads for k of them, instead of O(log n)).
do
  local gallop_bound = $3
  local x
  if ln > 0 then x = unpack('<d', L, LB + $2) end
  if ln == 0 or x > gallop_bound or ($4 == 1 and x == gallop_bound) then
    $1 = 0
  else
    local lo, hi = 0, 1
    while hi < ln do
      x = unpack('<d', L, LB + $2 + 16 * hi)
      if x > gallop_bound or ($4 == 1 and x == gallop_bound) then break end
      lo = hi
      hi = hi * 2
    end
    if hi > ln then hi = ln end
    lo = lo + 1
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      x = unpack('<d', L, LB + $2 + 16 * mid)
      if x > gallop_bound or ($4 == 1 and x == gallop_bound) then hi = mid else lo = mid + 1 end
    end
    $1 = lo
  end
end

--@@ cum
-- $1 = the running total through entry $2 (the base for entry −1)
if $2 < 0 then $1 = lbase else $1 = unpack('<d', L, LB + 17 + 16 * $2) end

--@@ first_reaching
-- $1 = the index of the oldest entry whose running total is >= $2 (ln when none).
@gallop($1, 17, $2, 1)

--@@ used
-- $1 = the cost in the window (now − per, now]: the total minus the running total before the window's first entry
local k, before
@first_after(k, now - $PER)
@cum(before, k - 1)
$1 = ltotal - before

--@@ decide
@used($USED)
$OK = $USED + cost <= $LIM_SLACK

--@@ charge
-- push (files cost at now: into the newest entry when the clock stepped back or in the same ms, else a new entry)
-- and trim (drops the entries no rule can look at again: those at or before now − LOG_PER, and the oldest ones while
-- the newer entries already hold more than LOG_LIMIT), written as one new string: the pushed entry is never dropped (its time
-- is now, and nothing newer holds anything), so what to drop is found on the entries as they are, whose running
-- totals the push does not change (but the newest one's, when it rewrites it).
local total = ltotal + cost
local rewrite = ln > 0 and now <= lnewest
local last = ln
if rewrite then last = ln - 1 end
local drop, c
@first_after(drop, now - $LOG_PER)
while drop < last do
  @cum(c, drop)
  if not (total - c > $LOG_LIMIT) then break end
  drop = drop + 1
end
local base = lbase
if drop > 0 then
  @cum(base, drop - 1)
end
if rewrite then
  L = pack('<d', base) .. sub(L, LB + 9 + 16 * drop, LB + 16 * ln) .. pack('<d', total)
else
  L = pack('<d', base) .. sub(L, LB + 9 + 16 * drop, LB + 8 + 16 * ln) .. pack('<dd', now, total)
  ln = ln + 1
  lnewest = now
end
ln = ln - drop
LB, lbase, ltotal, lcharged = 0, base, total, true

--@@ report
local used = $USED
if lcharged then
  @used(used)
end
$REM = floor($LIMIT - used + $SLACK)
if not ($REM > 0) then $REM = 0 end
if allowed or used + cost <= $LIM_SLACK then
  $WAIT = 0
elseif cost > $LIM_SLACK then
  $WAIT = INF
else
  -- the entries slide out oldest first until the total before the window reaches total + cost − limit; the last of
  -- them, entry k, leaves the window at time(k) + per
  local k
  @first_reaching(k, ltotal + cost - $LIMIT - $SLACK)
  $WAIT = unpack('<d', L, LB + 9 + 16 * k) + $PER - now
end
if used > 0 then $RESET = lnewest + $PER - now else $RESET = 0 end

--@@ refund
-- gives back cost: removes the newest entries worth it (the newest remaining one keeps what is left of it), as
-- Log.refund does; never below an empty log
if ln > 0 and cost > 0 then
  local target = ltotal - cost
  local eps = (abs(ltotal) + cost) * 1e-12
  -- lo: the oldest entry whose running total is over the target
  local lo, hi = 0, ln
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if unpack('<d', L, LB + 17 + 16 * mid) > target + eps then hi = mid else lo = mid + 1 end
  end
  local before
  @cum(before, lo - 1)
  local kept = sub(L, LB + 9, LB + 8 + 16 * lo)
  if before >= target - eps then
    L = pack('<d', lbase) .. kept
    ln = lo
  else
    local tk = unpack('<d', L, LB + 9 + 16 * lo)
    L = pack('<d', lbase) .. kept .. pack('<dd', tk, target)
    ln = lo + 1
  end
  LB, lcharged = 0, true
  if ln == 0 then
    L, lbase, ltotal, lnewest = pack('<d', 0), 0, 0, -INF
  else
    lnewest, ltotal = unpack('<dd', L, 9 + 16 * (ln - 1))
  end
end
