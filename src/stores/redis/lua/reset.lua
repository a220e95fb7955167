--[[
reset.lua — forgets a client's rule state, not its block or exemption.
KEYS[1] — the client's value (record.lua): the state is dropped; the key then expires with its override.
No ARGV. Returns 1.
]]
local key = KEYS[1]
local value = Record.get(key)
local ov = Record.read(value)
if not ov then
  redis.call('DEL', key)
  return 1
end
Record.store(key, Record.header(ov.kind, ov.untilMs, ov.oe, 0, ov.reason), ov.oe, wall())
return 1
