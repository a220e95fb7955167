--[[
fleet.lua — one heartbeat of an instance in the fleet registry (src/stores/redis/fleet.ts): registers it until
now + expiry, drops the instances whose registration expired, and counts the live ones. Times are the server's
(TIME), so instances with skewed clocks agree. Standalone: no common.lua.
What another client may have left there is not trusted: a key of another type is replaced (else every heartbeat
failed WRONGTYPE and N stayed at its last count for good), and a registration that expires later than any heartbeat
sets — more than MAX_EXPIRY from now: +inf, garbage, or one made before the server's clock stepped back — is dropped
(else it counted for good; an instance whose registration this drops registers again at its next heartbeat).
KEYS[1] — the registry: a sorted set, instance id → when its registration expires (ms, server TIME).
ARGV[1] — this instance's id; ARGV[2] — expiry: ms a registration lasts without another heartbeat.
Returns the number of live instances, this one included.
]]
local MAX_EXPIRY = 2147483647 -- the largest expiry the store accepts (fleet.ts readFleet), ms
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = tonumber(ARGV[2])
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
redis.call('ZADD', KEYS[1], now + expiry, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. string.format('%.17g', now + MAX_EXPIRY), '+inf')
redis.call('PEXPIRE', KEYS[1], expiry)
return redis.call('ZCARD', KEYS[1])
