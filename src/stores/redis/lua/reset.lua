--[[
reset.lua — forgets a client's rule state, not its block or exemption.
KEYS[1] — the client's hash (fields in policy.lua's header): drops s and se; the key then expires with its override (oe).
No ARGV. Returns 1 when there was state to forget, else 0.
]]
local key = KEYS[1]
local fields = redis.call('HMGET', key, 's', 'oe')
if not fields[1] then return 0 end
redis.call('HDEL', key, 's', 'se')
if fields[2] then expire(key, nil, number(fields[2]), wall()) end
return 1
