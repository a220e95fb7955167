--[[
unoverride.lua — lifts a client's override if it is of the given kind (unblock lifts a block, not an exemption).
KEYS[1] — the client's override: '<b|e> <until ms or inf>[\n<reason>]'.
ARGV[1] — kind: 'b' (block) or 'e' (exempt).
Returns 1 when an override was lifted, else 0.
]]
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
