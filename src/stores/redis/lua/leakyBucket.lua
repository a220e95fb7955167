--[[
leakyBucket.lua — the twin of LeakyBucket in src/core/algorithms/tokenBucket.ts: a token bucket whose next() also
reports delay (ms). Needs tokenBucket.lua before it in the composed script; a module (no KEYS or ARGV of its own).
State s[o+1..o+2]: level — cost units in the bucket; t — time of the last update, ms since the epoch.
]]
local leakyBucket = { new = function(c) return tokenBucket_new(c, true) end }
