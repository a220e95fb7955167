--[[
register.lua — adds a bucket's tag to the registry of buckets that may hold entries of the index of blocks and
exemptions (src/stores/redis/listing.ts), or removes it. Standalone: no common.lua.
KEYS[1] — the registry: a hash, tag → '1'.
ARGV[1] — the tag; ARGV[2] — '1' to add, '0' to remove.
Returns what HSET or HDEL returns.
]]
if ARGV[2] == '1' then return redis.call('HSET', KEYS[1], ARGV[1], '1') end
return redis.call('HDEL', KEYS[1], ARGV[1])
