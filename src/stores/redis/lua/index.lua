--[[
index.lua — the index of blocks and exemptions, so that they can be listed without scanning every client (the
operators' view). A module of override.lua and unoverride.lua (no KEYS or ARGV of its own). Per policy and hash
slot group (one group on a standalone server, one per hash slot on a Cluster, so that a script touches one slot):
  idx — a sorted set: member the client's key as the application gave it, score the override's end (ms on the
        check's clock, or +inf until lifted);
  det — a hash: the same member → kind ('b' or 'e') .. little-endian doubles until (ms, or inf), since (ms, when it
        was set) .. the reason (bytes, possibly empty).
An override that ends stays in the index until pruned: by the next override of the same group, or by a listing
(prune.lua); a listing ignores ended ones anyway.
]]

-- Index.prune — drops up to 100 entries that ended at or before now.
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
