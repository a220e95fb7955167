--[[
slidingWindow.lua — the twin of src/core/algorithms/slidingWindow.ts (Cloudflare's sliding window counter), as code
templates that the composer (src/stores/redis/compose/) pastes into the one straight-line script of a policy, once
per slidingWindow rule. No KEYS or ARGV of its own: the policy script (policy.lua) reads them. Each `--@@ name` line
starts a template; `@roll` pastes the roll template.

Placeholders, replaced per rule at attach time (constants as exact numeric literals: the doubles countConstants in
src/core/algorithms/common.ts computes, which the core's class uses too):
  $S1, $S2, $S3 — the stored state: prev — the previous window's count, cost units; curr — the current window's
                  count, cost units; start — the current window's start, ms since the epoch (aligned to the epoch)
  $N1, $N2, $N3 — the state as charged by this request
  $OK        — decide: whether this rule admits the request
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $LIMIT     — cost units per window;  $PER — the window, ms
  $SLACK     — countSlack(limit) (1e-9 of it, at most 1e-6), cost units;  $LIM_SLACK — limit + slack;  $TIME_SLACK — ms (the core's TIME_SLACK)
Policy locals used: now (ms), cost (cost units), allowed, floor, INF.
]]

--@@ roll
-- the windows moved to now: prev, curr, start, the weighted estimate (cost units) and the tolerance of the limit
-- comparison (the slack plus what the estimate falls, prev/per per ms, in TIME_SLACK). A clock that stepped back is
-- weighed at the stored window's start (the strictest point).
local prev, curr, start = $S1, $S2, $S3
local at = now
local w = floor(now / $PER) * $PER
if w > start then
  if w == start + $PER then prev = curr else prev = 0 end
  curr = 0
  start = w
elseif now < start then
  at = start
end
local tolerance = $SLACK + (prev / $PER) * $TIME_SLACK
local estimate = prev * (1 - (at - start) / $PER) + curr

--@@ decide
@roll
$N1 = prev
$N2 = curr + cost
$N3 = start
$OK = estimate + cost <= $LIMIT + tolerance

--@@ report
@roll
$REM = floor($LIMIT - estimate + tolerance)
if not ($REM > 0) then $REM = 0 elseif $REM > floor($LIMIT + 1e-6) then $REM = floor($LIMIT + 1e-6) end
if allowed or estimate + cost <= $LIMIT + tolerance then
  $WAIT = 0
elseif cost > $LIM_SLACK then
  $WAIT = INF
else
  -- within this window the estimate falls linearly as the previous window slides out; if that is not enough, in
  -- the next window, where this window's count is the one sliding out
  local room = $LIMIT - cost - curr
  if room >= 0 then
    $WAIT = start + $PER * (1 - room / prev) - now
  else
    local x = $PER * (1 - ($LIMIT - cost) / curr)
    if not (x > 0) then x = 0 end
    $WAIT = start + $PER + x - now
  end
end
if curr > 0 then $RESET = start + 2 * $PER - now elseif prev > 0 then $RESET = start + $PER - now else $RESET = 0 end

--@@ refund
-- gives back cost to the window the latest charges went to: the stored current one, or, when it has just become the
-- previous one, the previous one (rolled first); older windows no longer count. Never below 0.
local w = floor(now / $PER) * $PER
if w > $S3 then
  if w == $S3 + $PER then
    $S1 = $S2 - cost
    if not ($S1 > 0) then $S1 = 0 end
    $S2 = 0
    $S3 = w
  end
else
  $S2 = $S2 - cost
  if not ($S2 > 0) then $S2 = 0 end
end
