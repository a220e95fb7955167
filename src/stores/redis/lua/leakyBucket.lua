--[[
leakyBucket.lua — the twin of LeakyBucket in src/core/algorithms/leakyBucket.ts: the token bucket's templates
(tokenBucket.lua, same placeholders and state: level — cost units in the bucket; t — ms since the epoch) plus the
delay, ms to hold an admitted request for smooth output: the queue ahead of it drained at limit/per, from the stored
time on when the clock stepped back behind it. No KEYS or ARGV of its own.
  $DELAY     — decide: the delay, ms (the policy reports 0 when it refuses)
]]

--@@ decide
@tokenBucket.decide
local ahead = $N1 - cost
if ahead > 0 then
  local lag = $S2 - now
  if not (lag > 0) then lag = 0 end
  $DELAY = lag + ahead / $PER_MS
else
  $DELAY = 0
end

--@@ report
@tokenBucket.report

--@@ refund
@tokenBucket.refund
