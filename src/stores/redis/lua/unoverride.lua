--[[
unoverride.lua — lifts a client's override if it is of the given kind (unblock lifts a block, not an exemption).
KEYS[1] — the client's value (record.lua): the override's header is dropped; the key then expires with its state.
ARGV[1] — kind: 'b' (block) or 'e' (exempt).
KEYS[2], KEYS[3] (optional) — the index of blocks and exemptions (index.lua, see override.lua): the client leaves it.
ARGV[2] — with an index: the client's key as the application gave it (the index's member).
Returns 1 when an override was lifted, else 0.
]]
local key = KEYS[1]
local value = Record.get(key)
local ov, at = Record.read(value)
if not ov or ov.kind ~= ARGV[1] then return 0 end
if KEYS[2] then Index.drop(KEYS[2], KEYS[3], ARGV[2]) end
if #value >= at then Record.store(key, 'n' .. string.sub(value, at), ov.se, wall()) else redis.call('DEL', key) end
return 1
