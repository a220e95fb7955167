--[[
refile.lua — moves one entry of the index of blocks and exemptions (index.lua) into the bucket where it belongs now,
if the override is still in force: run by a listing that found the entry in a bucket of another master (the client's
slot moved there since: a resharding, a bucket written under an older slot table). Runs on the client's master:
KEYS[1] — the client's value (record.lua), whose override is the truth.
ARGV[1], ARGV[2] — the bucket's sorted set and hash on KEYS[1]'s master (undeclared: another slot of the same node;
          touched first, so that a bucket of another node fails the script before it wrote anything).
ARGV[3] — the entry's member; ARGV[4] — its details (index.lua); ARGV[5] — its until (ms, a decimal string, or 'inf');
ARGV[6] — its kind ('b' or 'e').
The entry is filed unless the bucket has one for this member already (written on this master since: the newer).
Returns 1 when the client's value still holds that override (the entry is in force), else 0.
]]
local idx, det, member = ARGV[1], ARGV[2], ARGV[3]
local had = redis.call('HEXISTS', det, member)
local ov = Record.read(Record.get(KEYS[1]))
local untilMs = ARGV[5] == 'inf' and INF or tonumber(ARGV[5])
if not ov or ov.kind ~= ARGV[6] or ov.untilMs ~= untilMs then return 0 end
if had == 0 then
  redis.call('ZADD', idx, untilMs == INF and '+inf' or untilMs, member)
  redis.call('HSET', det, member, ARGV[4])
end
return 1
