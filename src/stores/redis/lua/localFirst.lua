--[[
localFirst.lua — the sync of the Redis store's local-first mode (src/stores/redis/localFirst/): one call applies, for
several clients of one policy, the charges an instance decided on its own copy, in the order they were made, each at
its own time, and returns every client's global state, which replaces the instance's copy. The rules' code is their
algorithms' own templates (gcra.lua …, `decide`, `report`, `adopt`), pasted by the composer
(src/stores/redis/localFirst/script.ts) as policy.lua's body pastes them; the value is read and written in
policy.lua's layout (record.lua), so the exact mode reads what this writes and the reverse (a mixed fleet keeps one
state per client). A charge is applied whatever the state says (the instance has already answered it): the state may
pass its limit, a debt the next decisions repay by refusing. A charge made at a time before the state's last update
is applied at that update's time (each algorithm's rule for a clock behind the state: nothing refills or decays
backwards), never earlier.

KEYS — pairs, one per client: KEYS[2i−1] the client's value (`<prefix>{<client>}:<policy id>`), KEYS[2i] the sequence
       hash of that value (`…~s`: per instance, the sequence number of the latest flush applied). Every key of one call
       in one hash slot (the caller groups them so on a Cluster).
ARGV[1] — the instance's id (a field of the sequence hashes).
ARGV[2] — keep: ms a sequence hash is kept after the last flush written to it (the instance retries a flush for less).
ARGV[3] — the instance's flushEvery, ms (with slidingLog rules: which entries of a long log are returned one by one)
then, per client in KEYS order: seq (the flush's sequence number for this client and instance, an integer; a flush
       whose seq is not above the stored one was applied already — a retry or a late duplicate — and changes nothing),
       m (the count of charges), at (the latest time the instance decided or asked about this client, ms: where a
       long sliding log is returned one entry at a time, `return_log`), then m triples: t (ms since the epoch, the charge's own time), cost (cost units > 0),
       flag ('1' admitted: every rule charged; '0' refused: the strict rules only).
Returns one string per client: little-endian doubles — kind (1 no override, 2 block, 3 exempt: the header as stored,
live or not), until (the override's end, ms on the checks' clock; 0 without one), wall (the server's TIME, ms),
applied (1 the charges were applied, 0 none or a duplicate), then the rules' state as stored (policy.lua's $STATE) —
with slidingLog rules then the log: base (the running total before its oldest entry), count (its entries returned; a
long log merged, `return_log`; −1 when even so more than $LOG_COPY, none returned: the instance decides that client by
the exact mode) and the entries, oldest first, as (time, running total) — then, for an override with a reason, 'r'
and the reason's bytes.

With slidingLog rules the shared log (slidingLog.lua) files each charge at its own time with the log's own `charge`
(a charge older than the log's newest entry is filed at that entry's time, as the exact mode files a clock behind
the log), by the log's accounting; the log is trimmed as the exact mode trims it (the longest period, the largest
limit), so Redis holds the same log whichever mode wrote it.
]]

--@@ sync
local inst, keep = ARGV[1], tonumber(ARGV[2])
local wall
do
  local tm = redis.call('TIME')
  wall = tonumber(tm[1]) * 1000 + tonumber(tm[2]) / 1000
end
local F = function(key, skey, p)
  $BODY
end
local out = {}
local p = 4
for k = 1, #KEYS, 2 do
  out[#out + 1], p = F(KEYS[k], KEYS[k + 1], p)
end
return out

--@@ body
local seq, m, lat = tonumber(ARGV[p]), tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2])
local q = p + 3
local np = q + 3 * m
local apply = false
if m > 0 then
  local last = redis.call('HGET', skey, inst)
  apply = not last or tonumber(last) < seq
end
-- sclock — false: the numbers stored are the charges' times, not the server's clock (no compact form is written)
local sclock = false
-- lnow — the latest charge's time, or the server's (a fetch): where the report that sets the expiry is made
local lnow = wall
if m > 0 then
  lnow = tonumber(ARGV[np - 3])
  if lnow > wall then lnow = wall end
end
local now = lnow
$FETCH
-- the override's header: kept as it is; a charge made while it was in force is dropped (the exact mode charges
-- nothing under a block or exemption)
local at, okind, ountil, oreason = 2, 1, 0
if v and byte(v, 1) == 111 then
  local untilMs, oe, se, rlen = unpack('<dddd', v, 3)
  at = 35
  $LOG_REREAD
  if rlen >= 0 then
    oreason = sub(v, 35, 34 + rlen)
    at = 35 + rlen
  end
  ountil = untilMs
  if byte(v, 2) == 98 then okind = 2 else okind = 3 end
  $LOG_UNWRAP
end
$LOCALS
$LOAD
$LOG_HEAD
local changed = false
local cost, allowed, admitted = 0, true, true
$ADOPT
if apply then
  for j = q, np - 1, 3 do
    local t = tonumber(ARGV[j])
    if not (okind > 1 and ountil > t) then
      now, cost = t, tonumber(ARGV[j + 1])
      local all = ARGV[j + 2] == '1'
      $LOOP_LOCALS
      $DECIDE
      if all then
        $CHARGE_ALL
      else
        $CHARGE_STRICT
      end
      $LOG_CHARGE
      changed = true
    end
  end
  redis.call('HSET', skey, inst, seq)
  redis.call('PEXPIRE', skey, keep)
end
now, cost = lnow, 0
$LOG_DECIDE
$REPORT
if changed then
  -- the header has ended by the time of a charge applied under it: the value is the state alone, as the exact
  -- mode writes it once an override is over; to expire when the state decides as a fresh client's would
  okind, ountil, oreason = 1, 0, nil
  if fresh > 0 then
    $STORE
  else
    redis.call('DEL', key)
  end
end
$RETURN

--@@ return
return pack('$REPLY_FMT', okind, ountil, wall, apply and 1 or 0, $STATE) .. (oreason and ('r' .. oreason) or ''), np

--@@ log_unwrap
-- (slidingLog rules) a charge applied after the override's end drops the override's header, as the exact mode does
-- once an override is over: the value is rewritten without it before the log's header is read, so that the log's
-- writes in place land where the script reads them
if apply then
  local late = false
  for j = q, np - 1, 3 do
    if not (okind > 1 and ountil > tonumber(ARGV[j])) then
      late = true
      break
    end
  end
  if late then
    $LOG_WHOLE
    redis.call('SET', key, 'n' .. sub(v, at), 'KEEPTTL')
    $LOG_UNWRAP_V
  end
end

--@@ log_charge
-- the shared log files the charge at its own time, by the log's accounting; an entry written in place goes to Redis
-- at once (v too, when it holds that byte): the next charge's searches read it. A buffer built anew longer than the
-- head is stored at once (the final store writes the head and the expiry), so that the next charges write in place
-- instead of copying it each
admitted = all
$CHARGE
if lpos then
  redis.call('SETRANGE', key, lpos, ldata)
  if lpos < #v then v = sub(v, 1, lpos) .. ldata .. sub(v, lpos + #ldata + 1) end
  lpos, cq = nil, -INF
elseif lwhole and #lbuf > $HEAD then
  local value = $STATE_HEAD .. lbuf
  redis.call('SET', key, value, 'KEEPTTL')
  v, whole, at, le, lwhole, lbuf, cq = sub(value, 1, $HEAD), false, 2, $LE, false, nil, -INF
end

--@@ return_log
-- the state, and the log as it now is in Redis (none when it was deleted as a fresh client's). A log of more than
-- $LOG_COPY entries is returned merged: only the entries that may leave a rule's window while the copy decides (time
-- in (r − per, r − per + 2 × every] for each period per, r the client's `at`, every = ARGV[3], the instance's
-- flushEvery: the copy decides from r for that long, plus a round trip) are returned one by one; each run of entries between those is one entry, at the run's newest time with its running
-- total (its cost counted until its newest entry leaves the window: never less than the exact log counts). More than
-- $LOG_COPY entries even so: count −1, none returned.
local lout, lcount, lb = '', ln, lbase
if changed and not (fresh > 0) then
  lcount, lb = 0, 0
elseif ln > $LOG_COPY then
  local every, r = tonumber(ARGV[3]), lat
  if not (r > 0) then r = lnewest end
  local parts, from = {}, 0
  lcount = 0
  $LOG_EDGES
  if lcount >= 0 and from < ln then
    parts[#parts + 1] = pack('<dd', lnewest, ltotal)
    lcount = lcount + 1
  end
  if lcount > $LOG_COPY then lcount = -1 end
  if lcount > 0 then lout = table.concat(parts) end
elseif ln > 0 then
  local from = le + 16 * loff
  if whole then
    lout = sub(v, from, from + 16 * ln - 1)
  else
    lout = redis.call('GETRANGE', key, from - 1, from + 16 * ln - 2)
  end
end
return pack('$REPLY_FMT', okind, ountil, wall, apply and 1 or 0, $STATE_ARGSlb, lcount) .. lout .. (oreason and ('r' .. oreason) or ''), np

--@@ log_edge
-- the entries whose time is in (r − $PER, r − $PER + 2 × every], returned one by one after the run before them
-- as one entry (the periods in decreasing order: the ranges come in the log's order)
if lcount >= 0 then
  local a, b
  @slidingLog.first_after(OUT = a, AFTER = r - $PER, FROM = 0)
  @slidingLog.first_after(OUT = b, AFTER = r - $PER + 2 * every, FROM = 0)
  if a < from then a = from end
  if b > a then
    if lcount + (b - a) + 1 > $LOG_COPY then
      lcount = -1
    else
      if a > from then
        local t, c
        @slidingLog.entry(OUT = t, INDEX = a - 1, FIELD = 0)
        @slidingLog.cum(OUT = c, INDEX = a - 1)
        parts[#parts + 1] = pack('<dd', t, c)
        lcount = lcount + 1
      end
      local p0 = le + 16 * (loff + a)
      if whole then
        parts[#parts + 1] = sub(v, p0, p0 + 16 * (b - a) - 1)
      else
        parts[#parts + 1] = redis.call('GETRANGE', key, p0 - 1, p0 + 16 * (b - a) - 2)
      end
      lcount = lcount + (b - a)
      from = b
    end
  end
end
