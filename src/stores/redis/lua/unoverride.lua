--[[
unoverride.lua — lifts a client's override if it is of the given kind (unblock lifts a block, not an exemption).
KEYS[1] — the client's value (record.lua): the override's header is dropped; the key then expires with its state.
ARGV[1] — kind: 'b' (block) or 'e' (exempt).
ARGV[2] — with an index: the client's member in it (index.lua); absent without.
ARGV[3], ARGV[4] — with an index: its bucket's sorted set and hash (index.lua, see override.lua): the client leaves it.
Returns 1 when an override was lifted, else 0.
]]
local key = KEYS[1]
local value = Record.get(key)
local ov, at = Record.read(value)
if not ov or ov.kind ~= ARGV[1] then return 0 end
if ARGV[3] and ARGV[3] ~= '' then Index.drop(ARGV[3], ARGV[4], ARGV[2]) end
if #value >= at then Record.store(key, 'n' .. string.sub(value, at), ov.se, wall()) else redis.call('DEL', key) end
return 1
