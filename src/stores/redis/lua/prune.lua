--[[
prune.lua — drops the ended entries of one group of the blocks-and-exemptions index (index.lua), run by a listing
that found some. Standalone: no common.lua.
KEYS[1] — the index's sorted set; KEYS[2] — its hash of details.
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
Returns the number of entries dropped.
]]
local now = ARGV[1]
if now == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
else
  now = tonumber(now)
end
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for i = 1, #gone, 1000 do
  local part = { unpack(gone, i, math.min(i + 999, #gone)) }
  redis.call('HDEL', KEYS[2], unpack(part))
  redis.call('ZREM', KEYS[1], unpack(part))
end
return #gone
