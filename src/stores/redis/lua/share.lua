--[[
share.lua — writes one process's observation summary (the operators' view: top clients) where every process reads
it, and drops the summaries of processes that stopped writing. Standalone: no common.lua.
KEYS[1] — a hash: process name → its latest summary (JSON, src/observe/sharing.ts).
KEYS[2] — a sorted set: process name → when it last wrote (ms, server TIME). Same hash slot as KEYS[1].
ARGV[1] — this process's name; ARGV[2] — its summary; ARGV[3] — ttl: ms a summary counts (both keys expire after
          it when no process writes any more).
Returns the number of stale summaries dropped.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], now, ARGV[1])
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
if #old > 0 then
  redis.call('HDEL', KEYS[1], unpack(old))
  redis.call('ZREM', KEYS[2], unpack(old))
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return #old
