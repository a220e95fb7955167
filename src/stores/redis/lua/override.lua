--[[
override.lua — sets a client's block or exemption, replacing any earlier one (the later of block/exempt wins).
KEYS[1] — the client's value (record.lua): rewritten with the override's header before its state; expires at the
          later of the state's and the override's deadlines (never, for an override until lifted).
ARGV[1] — now: ms since the epoch, a decimal string; '' to use the server's TIME.
ARGV[2] — kind: 'b' (block) or 'e' (exempt).
ARGV[3] — for: ms, a decimal string, or 'inf' (until lifted).
ARGV[4] — with an index: the client's member in it (index.lua: policy id and encoded client key); '' without.
ARGV[5], ARGV[6] — with an index: its bucket's sorted set and hash (index.lua), on KEYS[1]'s master; '' without.
          Touched before KEYS[1] (a bucket on another node fails the script before it wrote anything), updated with
          the override, and pruned of up to 100 ended entries on the way.
ARGV[7] — reason (optional): reported on every decision the block makes ('' with ARGV[8] and no reason).
ARGV[8] — '1' (optional): only when the client has no block or exemption in force (an automatic block after a
          refusal: two refusals in one round trip keep the first one's end); otherwise nothing changes.
Returns 1, or 0 when ARGV[8] found one in force.
]]
local key = KEYS[1]
local idx, det = ARGV[5] or '', ARGV[6] or ''
local indexed = idx ~= ''
local now, isWall = clock(ARGV[1])
if indexed then Index.prune(idx, det, now) end
local wallnow = isWall and now or wall()
local duration = ARGV[3] == 'inf' and INF or tonumber(ARGV[3])
local value = Record.get(key)
local ov, at = Record.read(value)
if ARGV[8] == '1' and ov and ov.untilMs > now then return 0 end
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
  Record.store(key, Record.header(ARGV[2], untilMs, oe, se, ARGV[7]) .. state, d, wallnow)
elseif state ~= '' then
  Record.store(key, 'n' .. state, se, wallnow)
else
  redis.call('DEL', key)
end
if indexed then
  if untilMs > now then
    Index.put(idx, det, ARGV[4], ARGV[2], untilMs, now, ARGV[7])
  else
    Index.drop(idx, det, ARGV[4])
  end
end
return 1
