--[[
override.lua — sets a client's block or exemption, replacing any earlier one (the later of block/exempt wins).
KEYS[1] — the client's override: '<b|e> <until, ms since the epoch or inf>' and, after a newline, the block's reason.
          Expires with the override (PX); deleted when the override is already over.
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
ARGV[2] — kind: 'b' (block) or 'e' (exempt).
ARGV[3] — for: ms, a decimal string, or 'inf' (until lifted).
ARGV[4] — reason (optional): reported on every decision the block makes.
Returns the override's end, ms since the epoch (%.17g, or inf).
]]
local now = clock(ARGV[1])
local duration = ARGV[3] == 'inf' and INF or tonumber(ARGV[3])
local untilMs = now + duration
local value = ARGV[2] .. ' ' .. fmt(untilMs)
if ARGV[4] then value = value .. '\n' .. ARGV[4] end
if duration == INF then
  redis.call('SET', KEYS[1], value)
elseif untilMs > now then
  redis.call('SET', KEYS[1], value, 'PX', ceil(duration))
else
  redis.call('DEL', KEYS[1])
end
return fmt(untilMs)
