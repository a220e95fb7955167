--[[
record.lua — the layout of a client's value (one string key per client and policy, so every script is single-key:
a slot migration answers ASK or MOVED, never TRYAGAIN or CROSSSLOT). A module of the scripts (no KEYS or ARGV of
its own). The value is
  'n' .. state                                   — no block or exemption, or
  'o' .. kind .. header .. reason .. state       — with one: kind 'b' (block) or 'e' (exempt); header = little-endian
                                                   doubles until (ms since the epoch on the check's clock, or inf),
                                                   oe (when the override ends on the server's clock, ms, or inf),
                                                   se (when the state becomes equivalent to a fresh client's on the
                                                   server's clock, ms; 0 without state), reason length (bytes, −1
                                                   for none);
where state is the rules' state and the shared log as policy.lua describes (empty: a fresh client), or a compact
one-number state (a decimal integer, policy.lua), which Record.get reads as 'n' .. state. The key expires at the later
of the state's and the override's deadlines, never earlier.
]]

-- Record.read — a value's override (nil when none) and the byte where its state starts (nil when there is no value).
local function record_read(v)
  if not v then return nil, nil end
  if string.byte(v, 1) ~= 111 then return nil, 2 end -- 'n'
  local untilMs, oe, se, rlen = struct.unpack('<dddd', v, 3)
  local o = { kind = string.sub(v, 2, 2), untilMs = untilMs, oe = oe, se = se }
  if rlen >= 0 then o.reason = string.sub(v, 35, 34 + rlen) else rlen = 0 end
  return o, 35 + rlen
end

-- Record.header — the start of a value with an override.
local function record_header(kind, untilMs, oe, se, reason)
  return 'o' .. kind .. struct.pack('<dddd', untilMs, oe, se, reason and #reason or -1) .. (reason or '')
end

-- Record.store — writes value to expire at d (ms on the server clock; inf or more than 1e13 ms ahead: never), or deletes
-- the key when d has passed.
local function record_store(key, value, d, wallnow)
  local left = d - wallnow
  if left > 1e13 then
    -- inf, or past ~317 years: no expiry rather than a PX Redis refuses (a number that large is sent as 1e+22)
    redis.call('SET', key, value)
    return
  end
  if left > 0 then redis.call('SET', key, value, 'PX', ceil(left)) else redis.call('DEL', key) end
end
-- Record.get — a client's value, a compact one-number state (a decimal j: the number is the key's expiry less j/4096 ms,
-- policy.lua) rewritten as 'n' and the number.
local function record_get(key)
  local v = redis.call('GET', key)
  if v and string.byte(v, 1) <= 57 then v = 'n' .. struct.pack('<d', redis.call('PEXPIRETIME', key) - tonumber(v) / 4096) end
  return v
end
local Record = { get = record_get, read = record_read, header = record_header, store = record_store }
