--[[
tokenBucket.lua — the twin of TokenBucket in src/core/algorithms/tokenBucket.ts, as code templates that the composer
(src/stores/redis/compose/) pastes into the one straight-line script of a policy, once per tokenBucket rule
(leakyBucket.lua reuses them). No KEYS or ARGV of its own: the policy script (policy.lua) reads them. Each
`--@@ name` line starts a template.

Placeholders, replaced per rule at attach time (constants as exact numeric literals: the doubles the algorithm's
*Constants function in src/core/algorithms/ computes, which its class uses too):
  $S1, $S2   — the stored state: debt — tokens missing from a full bucket (the leaky bucket's level), cost units;
               t — time of the last update, ms since the epoch
  $N1, $N2   — the state as charged by this request
  $OK        — decide: whether this rule admits the request
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $BURST     — cost units;  $PER_MS — refill rate limit/per, cost units per ms
  $SLACK     — countSlack(burst) + perMs·TIME_SLACK, cost units;  $BURST_SLACK — burst + slack
Policy locals used: now (ms), cost (cost units), allowed, floor, INF.
Behind the stored time (the clock stepped back) nothing refills, and every wait counts from the stored time: the lag.
]]

--@@ decide
local d = $S1
local elapsed = now - $S2
if elapsed > 0 then d = d - elapsed * $PER_MS end
if not (d > 0) then d = 0 end
$N1 = d + cost
if now > $S2 then $N2 = now else $N2 = $S2 end
$OK = d + cost <= $BURST_SLACK

--@@ report
local d = $S1
local elapsed = now - $S2
if elapsed > 0 then d = d - elapsed * $PER_MS end
if not (d > 0) then d = 0 end
local lag = $S2 - now
if not (lag > 0) then lag = 0 end
$REM = floor($BURST - d + $SLACK)
if not ($REM > 0) then $REM = 0 elseif $REM > floor($BURST + 1e-6) then $REM = floor($BURST + 1e-6) end
if allowed then
  $WAIT = 0
else
  local over = d + cost - $BURST
  if over <= $SLACK then $WAIT = 0 elseif cost > $BURST_SLACK then $WAIT = INF else $WAIT = lag + over / $PER_MS end
end
if d > 0 then $RESET = lag + d / $PER_MS else $RESET = 0 end

--@@ refund
-- gives back cost: the tokens go back into the bucket, refilled to now first, never beyond a full bucket
local d = $S1
local elapsed = now - $S2
if elapsed > 0 then d = d - elapsed * $PER_MS end
if not (d > 0) then d = 0 end
d = d - cost
if not (d > 0) then d = 0 end
$S1 = d
if now > $S2 then $S2 = now end
