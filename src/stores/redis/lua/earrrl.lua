--[[
earrrl.lua — the twin of src/core/algorithms/earrrl.ts (CEWMA of the request rate: every request an impulse, the
history folded into one equivalent impulse N at the time T of the last request), as code templates that the composer
(src/stores/redis/compose/) pastes into the one straight-line script of a policy, once per earrrl rule.
No KEYS or ARGV of its own: the policy script (policy.lua) reads them. Each `--@@ name` line starts a template.

Placeholders, replaced per rule at attach time (constants as exact numeric literals: the doubles the algorithm's
*Constants function in src/core/algorithms/ computes, which its class uses too):
  $S1, $S2   — the stored state: n — the equivalent impulse, cost units; t — time of the last update, ms since the epoch
  $N1, $N2   — the state as charged by this request
  $OK, $RATE — decide: whether this rule admits the request; the estimate before it, per second
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms), resetAfter (ms)
  $LAMBDA    — λ = ln 2 / halfLife, per ms;  $NEG_LAMBDA — −λ
  $THRESHOLD — limit/per, cost units per ms;  $SLACK — threshold·(REL_SLACK + λ·TIME_SLACK), cost units per ms
  $THR_SLACK — threshold + slack;  $THR_L — threshold/λ, cost units;  $SLACK_L — slack/λ, cost units
  $FLOOR     — threshold·NEGLIGIBLE: an estimate below it is as good as fresh
Policy locals used: now (ms), cost (cost units), allowed, floor, exp, log.
Behind the stored time T (the clock stepped back) nothing decays, and waits count from T: the lag.
]]

--@@ decide
local d = $S1
local age = now - $S2
if age > 0 then d = d * exp($NEG_LAMBDA * age) end
local estimate = d * $LAMBDA
$N1 = cost + d
if now > $S2 then $N2 = now else $N2 = $S2 end
$RATE = estimate * 1000
$OK = estimate <= $THR_SLACK

--@@ report
local d = $S1
local age = now - $S2
if age > 0 then d = d * exp($NEG_LAMBDA * age) end
local estimate = d * $LAMBDA
local lag = $S2 - now
if not (lag > 0) then lag = 0 end
$REM = floor($THR_L - d + 1 + $SLACK_L)
if not ($REM > 0) then $REM = 0 elseif $REM > floor($THR_L + 1 + 1e-6) then $REM = floor($THR_L + 1 + 1e-6) end
if allowed or estimate <= $THR_SLACK then $WAIT = 0 else $WAIT = lag + log(estimate / $THRESHOLD) / $LAMBDA end
if estimate > $FLOOR then $RESET = lag + log(estimate / $FLOOR) / $LAMBDA else $RESET = 0 end

--@@ refund
-- gives back cost: the equivalent impulse at T loses it (exact when the refunded charge is the latest update); never below 0
$S1 = $S1 - cost
if not ($S1 > 0) then $S1 = 0 end
