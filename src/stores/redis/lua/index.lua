--[[
index.lua — the index of blocks and exemptions, so that they can be listed without scanning every client (the
operators' view). A module of override.lua, unoverride.lua and refile.lua (no KEYS or ARGV of its own). One bucket
per Redis master (src/stores/redis/listing.ts; one bucket on a standalone server) holds the overrides of every
limiter of a store whose clients live on that master:
  idx — a sorted set: member '<policy id>:<client key as encoded in its Redis key>', score the override's end (ms on
        the check's clock, or +inf until lifted);
  det — a hash: the same member → kind ('b' or 'e') .. little-endian doubles until (ms, or inf), since (ms, when it
        was set) .. the reason (bytes, possibly empty).
The bucket's keys are not the script's KEYS: they are on the same master as KEYS[1] but in another slot (a Cluster
runs a script that touches an undeclared key of its own, and refuses one of another node before any write: the
scripts touch the bucket before the client's value). An override that ends stays in its bucket until pruned: by the
next override filed there, or by a listing (prune.lua); a listing ignores ended ones anyway.
]]

-- Index.prune — drops up to 100 entries that ended at or before now (and touches the bucket first: a bucket on
-- another node fails the script here, before it wrote anything).
local function index_prune(idx, det, now)
  local gone = redis.call('ZRANGEBYSCORE', idx, '-inf', now, 'LIMIT', 0, 100)
  if #gone > 0 then
    redis.call('HDEL', det, unpack(gone))
    redis.call('ZREM', idx, unpack(gone))
  end
end

-- Index.put — files member's override of kind until untilMs (set at now) with its reason.
local function index_put(idx, det, member, kind, untilMs, now, reason)
  redis.call('ZADD', idx, untilMs == INF and '+inf' or untilMs, member)
  redis.call('HSET', det, member, kind .. struct.pack('<dd', untilMs, now) .. (reason or ''))
end

-- Index.drop — removes member.
local function index_drop(idx, det, member)
  redis.call('ZREM', idx, member)
  redis.call('HDEL', det, member)
end
local Index = { prune = index_prune, put = index_put, drop = index_drop }
