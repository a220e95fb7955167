--[[
exponential.lua — the twin of src/core/algorithms/exponential.ts, Tony Finch's exponential limiter, as code templates
that the composer (src/stores/redis/compose/) pastes into the one straight-line script of a policy, once per
exponential rule. No KEYS or ARGV of its own: the policy script (policy.lua) reads them. Each `--@@ name` line starts
a template; a line `@expm1(OUT = y, X = x)` pastes the expm1 template with $OUT = y, $X = x.

Placeholders, replaced per rule at attach time (constants as exact numeric literals: the doubles the algorithm's
*Constants function in src/core/algorithms/ computes, which its class uses too):
  $S1, $S2   — the stored state: r — the average rate, cost units per period; t — time of the last update, ms
  $N1, $N2   — the state as charged by this request
  $OK, $RATE — decide: whether this rule admits the request; the average including it, per second
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $LIMIT     — cost units per period (also the burst);  $PER — the averaging period, ms
  $SLACK     — countSlack(limit) + limit·TIME_SLACK/per, cost units;  $LIM_SLACK — limit + slack
  $FLOOR     — limit·NEGLIGIBLE: an average below it is as good as fresh
Policy locals used: now (ms), cost (cost units), allowed, floor, exp, log, abs, INF.
MIN_INTERVAL (1e-10 periods) is Finch's clamp of the gap, so that two requests in one instant divide by no zero.
]]

--@@ expm1
-- $OUT = e^$X − 1 (Lua 5.1 has no math.expm1) without the cancellation of exp(x) − 1 near 0: the Taylor series where
-- |x| is tiny, Kahan's (u − 1)·x / ln u with u = e^x up to |x| = 1 (the rounding errors of u − 1 and ln u cancel).
do
  local x = $X
  local ax = abs(x)
  if ax < 1e-5 then
    $OUT = x + x * x / 2 + x * x * x / 6 + x * x * x * x / 24
  elseif ax < 1 then
    local u = exp(x)
    if u == 1 then $OUT = x elseif u - 1 == -1 then $OUT = -1 else $OUT = (u - 1) * x / log(u) end
  else
    $OUT = exp(x) - 1
  end
end

--@@ decide
-- the average after a gap of i periods: (1 − e^(−i))·cost/i + e^(−i)·r, at least cost
local i = (now - $S2) / $PER
if i < 1e-10 then i = 1e-10 end
local alpha = exp(-i)
local em
@expm1(OUT = em, X = -i)
local v = (-em / i) * cost + alpha * $S1
if not (v > cost) then v = cost end
$N1 = v
if now > $S2 then $N2 = now else $N2 = $S2 end
$RATE = (v * 1000) / $PER
$OK = v <= $LIM_SLACK

--@@ report
local rv, t = $S1, $S2
local gap = (now - t) / $PER
local dv = rv
if gap > 0 then dv = rv * exp(-gap) end
-- remaining: the first further cost-1 request's average, as decide would compute it (max(r, 1) counts a request
-- after a gap in full); each one after it in the same instant adds about 1
do
  local i1 = gap
  if i1 < 1e-10 then i1 = 1e-10 end
  local em1
  @expm1(OUT = em1, X = -i1)
  local r1 = -em1 / i1 + exp(-i1) * rv
  if not (r1 > 1) then r1 = 1 end
  if r1 <= $LIM_SLACK then
    $REM = floor($LIMIT - r1 + $SLACK)
    if not ($REM > 0) then $REM = 0 end
    $REM = $REM + 1
    if $REM > floor($LIMIT + 1e-6) then $REM = floor($LIMIT + 1e-6) end
  else
    $REM = 0
  end
end
if dv > $FLOOR then
  local lag = t - now
  if not (lag > 0) then lag = 0 end
  $RESET = lag + $PER * log(dv / $FLOOR)
else
  $RESET = 0
end
$WAIT = 0
if not allowed then
  -- the exact gap i solving (1 − e^(−i))·cost/i + e^(−i)·r = limit, by Newton's method from max(gap, ln(r/limit))
  -- (from the left of the root of a falling convex function: it never overshoots)
  local i = gap
  local ic = i
  if ic < 1e-10 then ic = 1e-10 end
  local em
  @expm1(OUT = em, X = -ic)
  local v = (-em / ic) * cost + exp(-ic) * rv
  if not (v > cost) then v = cost end
  if v <= $LIM_SLACK then
    $WAIT = 0
  elseif cost > $LIM_SLACK then
    $WAIT = INF
  else
    local finch = log(rv / $LIMIT)
    if i < finch then i = finch end
    if i < 1e-10 then i = 1e-10 end
    for _ = 1, 100 do
      local e = exp(-i)
      @expm1(OUT = em, X = -i)
      local f = (-em / i) * cost + e * rv - $LIMIT
      local slope
      if i < 1e-3 then slope = -0.5 + i * (1 / 3 - i * (1 / 8 - i / 30)) else slope = (e * (1 + i) - 1) / (i * i) end
      local step = f / (cost * slope - e * rv)
      i = i - step
      if not (abs(step) > i * 1e-15) then break end
    end
    local w = t + i * $PER - now
    if w > 0 then $WAIT = w end
  end
end

--@@ refund
-- gives back cost: the average as of the latest update loses it, never below 0 (the nearest inverse: exact for
-- back-to-back requests, see src/core/algorithms/exponential.ts)
$S1 = $S1 - cost
if not ($S1 > 0) then $S1 = 0 end
