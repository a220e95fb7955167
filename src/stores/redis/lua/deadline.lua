--[[
deadline.lua — the deadline of a small script (override.lua, unoverride.lua, reset.lua), pasted before it: ARGV[1]
is taken off the front of ARGV (the script then reads its own ARGV as it documents). It is '' (no deadline) or ms
on the server's clock: a script that starts at or after it changes nothing and replies with the error `LATE`, since
its caller was already told that the change failed (a timeout).
]]
local deadline = table.remove(ARGV, 1)
if deadline ~= nil and deadline ~= '' and wall() >= tonumber(deadline) then
  return redis.error_reply('LATE the caller gave up on this call before it ran')
end
