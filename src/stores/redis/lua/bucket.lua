--[[
bucket.lua — reads a hash of the operators' view: a bucket of the index of blocks and exemptions (index.lua), or the
registry of buckets (src/stores/redis/listing.ts). A script rather than a plain HGETALL so that every client (ioredis
or node-redis, standalone or Cluster) routes it by its key. Read-only. Standalone: no common.lua.
KEYS[1] — the hash.
ARGV[1] (optional) — one field: its value alone (HGET) instead of the whole hash.
Returns HGETALL's flat list of fields and values, or the field's value (nil when absent).
]]
if ARGV[1] then return redis.call('HGET', KEYS[1], ARGV[1]) end
return redis.call('HGETALL', KEYS[1])
