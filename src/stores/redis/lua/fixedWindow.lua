--[[
fixedWindow.lua — the twin of src/core/algorithms/fixedWindow.ts, as code templates that the composer
(src/stores/redis/compose/) pastes into the one straight-line script of a policy, once per fixedWindow rule.
No KEYS or ARGV of its own: the policy script (policy.lua) reads them. Each `--@@ name` line starts a template.

Placeholders, replaced per rule at attach time (constants as exact numeric literals: the doubles countConstants in
src/core/algorithms/common.ts computes, which the core's class uses too):
  $S1, $S2   — the stored state: count — cost admitted in the window, cost units; start — the window's start, ms
               since the epoch (windows aligned to the epoch)
  $N1, $N2   — the state as charged by this request
  $OK        — decide: whether this rule admits the request
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $LIMIT     — cost units per window;  $PER — the window, ms
  $SLACK     — countSlack(limit) (1e-9 of it, at most 1e-6), cost units;  $LIM_SLACK — limit + slack
Policy locals used: now (ms), cost (cost units), allowed, floor, INF.
A clock that stepped back into an earlier window stays in the stored one.
]]

--@@ decide
local count, start = $S1, $S2
local w = floor(now / $PER) * $PER
if w > start then count, start = 0, w end
$N1 = count + cost
$N2 = start
$OK = $N1 <= $LIM_SLACK

--@@ report
local count, start = $S1, $S2
local w = floor(now / $PER) * $PER
if w > start then count, start = 0, w end
$REM = floor($LIMIT - count + $SLACK)
if not ($REM > 0) then $REM = 0 end
if allowed or count + cost <= $LIM_SLACK then $WAIT = 0 elseif cost > $LIM_SLACK then $WAIT = INF else $WAIT = start + $PER - now end
if count > 0 then $RESET = start + $PER - now else $RESET = 0 end

--@@ refund
-- gives back cost: the count goes down in the stored window, if it is still the current one (an older window's
-- charges are already forgiven); never below 0
if not (floor(now / $PER) * $PER > $S2) then
  $S1 = $S1 - cost
  if not ($S1 > 0) then $S1 = 0 end
end
