--[[
gcra.lua — the twin of src/core/algorithms/gcra.ts, the generic cell rate algorithm, as code templates that the
composer (src/stores/redis/compose/) pastes into the one straight-line script of a policy, once per gcra rule.
No KEYS or ARGV of its own: the policy script (policy.lua) reads them. Each `--@@ name` line starts a template.

Placeholders, replaced per rule at attach time (constants become exact numeric literals: the doubles gcraConstants in
src/core/algorithms/gcra.ts computes, which the core's class uses too):
  $S1        — the stored state: tat, the theoretical arrival time, ms since the epoch (0 for a fresh client)
  $N1        — the state as charged by this request (decide writes it; the policy stores it or not)
  $OK        — decide: whether this rule admits the request (boolean)
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $INTERVAL  — the emission interval T = per/limit, ms per cost unit
  $TOLERANCE — τ = burst·T, ms
  $SLACK     — tolerance of comparisons, τ·REL_SLACK + TIME_SLACK, ms
  $TOL_SLACK — τ + slack, ms;  $SLACK_I — slack/T, cost units
  $S2, $N2   — a shared policy's only (one with an id, whose key is named by its layout, not its limits): the
               interval T the TAT was written under, ms per cost unit (0 for a fresh client); the composer writes
               $N2 = $INTERVAL after decide
Policy locals used: now (ms), cost (cost units), allowed (the policy's verdict), changed, floor, INF.
]]

--@@ decide
local tat = $S1
if not (tat > now) then tat = now end
$N1 = tat + cost * $INTERVAL
$OK = $N1 - now <= $TOL_SLACK

--@@ report
local tat = $S1
if not (tat > now) then tat = now end
local ahead = $S1 - now
if not (ahead > 0) then ahead = 0 end
$REM = floor(($TOLERANCE - ahead) / $INTERVAL + $SLACK_I)
if not ($REM > 0) then $REM = 0 elseif $REM > floor($TOLERANCE / $INTERVAL + 1e-6) then $REM = floor($TOLERANCE / $INTERVAL + 1e-6) end
if allowed then
  $WAIT = 0
else
  local increment = cost * $INTERVAL
  local over = tat + increment - $TOLERANCE - now
  if over <= $SLACK then $WAIT = 0 elseif increment > $TOL_SLACK then $WAIT = INF else $WAIT = over end
end
if $S1 > now then $RESET = $S1 - now else $RESET = 0 end

--@@ refund
-- gives back cost: TAT moves back by cost·T, never behind now (a fresh client's schedule)
if $S1 > now then
  local back = $S1 - cost * $INTERVAL
  if back > now then $S1 = back else $S1 = now end
end

--@@ adopt
-- (a shared policy) a TAT written under another interval — a rule change, or another instance's rules during a rolling
-- change: TAT − now is used × T_old, so it becomes used × T, the same used amount judged by this rule; stored again
-- (changed), so that it drains at this rule's rate from now on and the key expires when it is fresh under this rule
if $S2 ~= $INTERVAL then
  if $S2 > 0 and $S1 > now then
    $S1 = now + ($S1 - now) / $S2 * $INTERVAL
    changed = true
  end
  $S2 = $INTERVAL
end
