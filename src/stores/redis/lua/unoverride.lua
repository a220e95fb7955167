--[[
unoverride.lua — lifts a client's override if it is of the given kind (unblock lifts a block, not an exemption).
KEYS[1] — the client's hash (fields in policy.lua's header): drops o and oe; the key then expires with its state (se).
ARGV[1] — kind: 'b' (block) or 'e' (exempt).
Returns 1 when an override was lifted, else 0.
]]
local key = KEYS[1]
local fields = redis.call('HMGET', key, 'o', 'se')
if fields[1] and string.sub(fields[1], 1, 1) == ARGV[1] then
  redis.call('HDEL', key, 'o', 'oe')
  if fields[2] then expire(key, number(fields[2]), nil, wall()) end
  return 1
end
return 0
