--[[
fleet.lua — one heartbeat of an instance in the fleet registry (src/stores/redis/fleet.ts): registers it until
now + expiry, drops the instances whose registration expired, and counts the live ones. Times are the server's
(TIME), so instances with skewed clocks agree. Standalone: no common.lua.
KEYS[1] — the registry: a sorted set, instance id → when its registration expires (ms, server TIME).
ARGV[1] — this instance's id; ARGV[2] — expiry: ms a registration lasts without another heartbeat.
Returns the number of live instances, this one included.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + expiry, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], expiry)
return redis.call('ZCARD', KEYS[1])
