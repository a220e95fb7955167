--[[
unfile.lua — removes one entry of the index of blocks and exemptions (index.lua) from a bucket where it no longer
belongs (refile.lua moved it, or its override is no longer in force), if it is still the entry that was read (a
newer one filed there since stays). Standalone: no common.lua.
KEYS[1] — the bucket's sorted set; KEYS[2] — its hash (same slot).
ARGV[1] — the member; ARGV[2] — the details as read.
Returns 1 when removed, else 0.
]]
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
