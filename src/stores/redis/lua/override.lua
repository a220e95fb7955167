--[[
override.lua — sets a client's block or exemption, replacing any earlier one (the later of block/exempt wins).
KEYS[1] — the client's value (record.lua): rewritten with the override's header before its state; expires at the
          later of the state's and the override's deadlines (never, for an override until lifted).
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
ARGV[2] — kind: 'b' (block) or 'e' (exempt).
ARGV[3] — for: ms, a decimal string, or 'inf' (until lifted).
ARGV[4] — with an index: the client's key as the application gave it (the index's member); '' without.
ARGV[5] — reason (optional): reported on every decision the block makes.
KEYS[2], KEYS[3] (optional) — the index of blocks and exemptions this client's key belongs to (index.lua): a sorted
          set of client keys by the override's end (ms, +inf: until lifted) and a hash of their details. Both share
          KEYS[1]'s hash slot. Updated here with the override, and pruned of up to 100 ended ones on the way.
Returns 1.
]]
local key = KEYS[1]
local now, isWall = clock(ARGV[1])
local wallnow = isWall and now or wall()
local duration = ARGV[3] == 'inf' and INF or tonumber(ARGV[3])
local value = Record.get(key)
local ov, at = Record.read(value)
local state, se = '', 0
if at and #value >= at then
  state = string.sub(value, at)
  if ov then
    se = ov.se
  else
    local pttl = redis.call('PTTL', key)
    se = pttl >= 0 and wallnow + pttl or INF
  end
end
local untilMs = now + duration
if untilMs > now then
  local oe = wallnow + duration
  local d = oe
  if state ~= '' and se > d then d = se end
  Record.store(key, Record.header(ARGV[2], untilMs, oe, se, ARGV[5]) .. state, d, wallnow)
elseif state ~= '' then
  Record.store(key, 'n' .. state, se, wallnow)
else
  redis.call('DEL', key)
end
if KEYS[2] then
  Index.prune(KEYS[2], KEYS[3], now)
  if untilMs > now then
    Index.put(KEYS[2], KEYS[3], ARGV[4], ARGV[2], untilMs, now, ARGV[5])
  else
    Index.drop(KEYS[2], KEYS[3], ARGV[4])
  end
end
return 1
