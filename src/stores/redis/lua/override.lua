--[[
override.lua — sets a client's block or exemption, replacing any earlier one (the later of block/exempt wins).
KEYS[1] — the client's hash (fields in policy.lua's header): writes o and oe, and the key's expiry (the later of
          se and oe); drops o and oe when the override is already over.
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
ARGV[2] — kind: 'b' (block) or 'e' (exempt).
ARGV[3] — for: ms, a decimal string, or 'inf' (until lifted).
ARGV[4] — reason (optional): reported on every decision the block makes.
Returns the override's end, ms since the epoch (%.17g, or inf).
]]
local key = KEYS[1]
local now, isWall = clock(ARGV[1])
local wallnow = isWall and now or wall()
local duration = number(ARGV[3])
local untilMs = now + duration
local se = number(redis.call('HGET', key, 'se'))
if untilMs > now then
  local value = ARGV[2] .. ' ' .. fmt(untilMs)
  if ARGV[4] then value = value .. '\n' .. ARGV[4] end
  local oe = wallnow + duration
  redis.call('HSET', key, 'o', value, 'oe', fmt(oe))
  expire(key, se, oe, wallnow)
else
  redis.call('HDEL', key, 'o', 'oe')
  if se then expire(key, se, nil, wallnow) end
end
return fmt(untilMs)
