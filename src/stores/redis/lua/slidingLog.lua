--[[
slidingLog.lua — the twin of src/core/algorithms/slidingLog.ts: the shared Log (requests oldest first, as times and
running cost totals, so that the cost in any window is a difference of two totals found by search) and the
SlidingLog rule over it, as code templates that the composer (src/stores/redis/compose/) pastes into the one
straight-line script of a policy. No KEYS or ARGV of its own: the log is the tail of the client's value, which the
policy script (policy.lua) reads and writes. Each `--@@ name` line starts a template; `@name(OUT = a, …)` pastes
template `name` with $OUT = a … (src/stores/redis/compose/template.ts).

The log in the value, after the rules' state: a header of little-endian numbers — base (the running total before the
oldest entry, cost units), newest (the newest entry's time, ms; −inf when empty), total (the running total through
it), off, n, cap (uint32: the oldest live entry's index in the buffer, live entries, the buffer's capacity, entries)
— then the buffer: cap entries of (time, ms since the epoch, never decreasing; running total through the entry) as two
doubles, live ones at indexes off … off + n − 1. A check costs O(log n) in the log's length, whatever it is:
  - the script reads only the head of the value ($HEAD bytes: the state, the header and the first entries; a short
    log is all there) with GETRANGE, and any other entry with GETRANGE too, 64 entries at a time (the chunk ck,
    starting at buffer index cq);
  - the entries are found by galloping searches from the oldest entry (the log is trimmed to the longest window at
    every filing, so the entries that left that window are few and at the front) or, for a rule whose window is
    shorter than the longest, from the newest;
  - a filing trims from the front by moving off, appends the new entry in place (SETRANGE) and rewrites the header
    with the state; the buffer is built anew (one GETRANGE of the live entries, one SET) only when it is full, more
    than 1.5 times too large, or short enough to be read whole (then it is exactly n entries long): each entry is
    copied O(1) times on average. A new buffer has room for about 1/8 more entries, rounded up to what the
    allocator would give anyway (jemalloc's size classes): 16 to 24 bytes per logged request.
Policy locals: le — the position of the buffer in v (1-based, so entry q starts at byte le + 16·q of v and of the
stored value); loff, ln, lcap, lbase, lnewest, ltotal — the header, decoded; lcharged — this check filed a request;
lwhole — the value is to be stored whole (SET) with lbuf as its buffer; lpos, ldata — else the bytes to write at
lpos (0-based) besides the head; cq, ck — the chunk last read (cq = −inf: none). The entries are indexed from 0 like the TypeScript.
Placeholders, replaced at attach time (constants as exact numeric literals: countConstants in
src/core/algorithms/common.ts, the doubles the core's class uses too):
  $OK, $USED — decide: whether this rule admits the request; the cost in its window before it (report reuses it
               when nothing was filed)
  $REM, $WAIT, $RESET — report: remaining (cost-1 requests), retryAfter (ms, INF when never), resetAfter (ms)
  $LIMIT     — cost units per window;  $PER — the window, ms;  $SLACK — countSlack(limit);  $LIM_SLACK — limit + slack
  $LOG_PER, $LOG_LIMIT — the longest period (ms) and largest limit (cost units) of the policy's slidingLog rules:
               what the trimmed log must still hold
  $BACK      — 1 when this rule's window is shorter than $LOG_PER (its searches gallop from the newest entry), else 0
  $HEAD      — the bytes of a value the script reads first ($HEAD_LAST = $HEAD − 1);  $FIXED — the bytes of a value
               besides its buffer, plus Redis's string header;  $STATE_HEAD — the value's head as packed: 'n', the
               state, the log's header;  $STATE_BODY_HEAD — the same without 'n' (after an override's header)
  $STATE_BYTES — the bytes of the rules' state (head: the log's header follows it)
The sections `fetch`, `reread`, `whole`, `unwrap` and `head` are the lines policy.lua's body has only with a log:
reading the value's head, and keeping `whole` true to what v holds while an override's header is read and dropped.
Policy locals used: key, v (the value's head, or all of it when whole), whole, at, live, changed, now (ms), cost (cost
units), allowed, fresh, floor, ceil, abs, pack, unpack, sub, INF.
]]

--@@ read
-- the log's header in v at byte $START; an empty log when absent
lcharged, lwhole, cq, ck, ldrop = false, false, -INF, '', 0
le = $START + 36
if v and #v >= $START + 35 then
  lbase, lnewest, ltotal, loff, ln, lcap = unpack('<dddI4I4I4', v, $START)
else
  lbase, lnewest, ltotal, loff, ln, lcap = 0, -INF, 0, 0, 0, 0
end

--@@ entry
-- $OUT = the field at byte $FIELD (0: the time, 8: the running total) of live entry $INDEX: the newest from the header, any
-- other from v, the chunk last read, or a new chunk of 64 entries (1 KB: about what one entry costs to fetch)
if $INDEX == ln - 1 then
  if $FIELD == 0 then $OUT = lnewest else $OUT = ltotal end
else
  local q = loff + $INDEX
  local p = le + 16 * q + $FIELD
  if p + 7 <= #v then
    $OUT = unpack('<d', v, p)
  else
    if q < cq or q >= cq + 64 then
      -- a chunk around q: the searches probe both ways
      cq = q - 32
      if cq < 0 then cq = 0 end
      ck = redis.call('GETRANGE', key, le - 1 + 16 * cq, le + 1022 + 16 * cq)
    end
    $OUT = unpack('<d', ck, 16 * (q - cq) + $FIELD + 1)
  end
end

--@@ gallop
-- $OUT = the oldest live entry whose field at byte $FIELD (0: time, 8: running total), as x, makes $TEST true ($TEST is false
-- for older entries and true from there on); ln when none. Galloping from the oldest entry ($FROM = 0) or the newest
-- ($FROM = 1): O(log k) reads for an answer k entries from where it starts, then a binary search.
do
  local x
  -- the answer is in (lo, hi]: $TEST is false at lo (or lo = −1) and true at hi (or hi = ln)
  local lo, hi, step = -1, 0, 1
  if $FROM == 0 then
    while hi < ln do
      @entry(OUT = x, INDEX = hi, FIELD = $FIELD)
      if $TEST then break end
      lo = hi
      hi = hi + step
      step = step * 2
    end
    if hi > ln then hi = ln end
  else
    lo, hi = ln - 1, ln
    while lo >= 0 do
      @entry(OUT = x, INDEX = lo, FIELD = $FIELD)
      if not ($TEST) then break end
      hi = lo
      lo = lo - step
      step = step * 2
    end
    if lo < -1 then lo = -1 end
  end
  while hi - lo > 1 do
    local mid = floor((lo + hi) / 2)
    @entry(OUT = x, INDEX = mid, FIELD = $FIELD)
    if $TEST then hi = mid else lo = mid end
  end
  $OUT = hi
end

--@@ first_after
-- $OUT = the index of the oldest entry with time > $AFTER (ln when none), galloping from the newest when $FROM = 1.
@gallop(OUT = $OUT, FIELD = 0, TEST = x > $AFTER, FROM = $FROM)

--@@ cum
-- $OUT = the running total through entry $INDEX (the base for entry −1)
if $INDEX < 0 then
  $OUT = lbase
else
  @entry(OUT = $OUT, INDEX = $INDEX, FIELD = 8)
end

--@@ decide
-- $USED = the cost in the window (now − per, now]: the total minus the running total before the window's first
-- entry, $K (kept for report)
do
  local before
  @first_after(OUT = $K, AFTER = now - $PER, FROM = $BACK)
  @cum(OUT = before, INDEX = $K - 1)
  $USED = ltotal - before
end
$OK = $USED + cost <= $LIM_SLACK

--@@ charge
-- push (files cost at now: into the newest entry when the clock stepped back or in the same ms, else a new entry)
-- and trim (drops the entries no rule can look at again: those at or before now − LOG_PER, and the oldest ones while
-- the newer entries already hold more than LOG_LIMIT). The pushed entry is never dropped (its time is now, and
-- nothing newer holds anything), so what to drop is found on the entries as they are, whose running totals the push
-- does not change (but the newest one's, when it rewrites it).
local total = ltotal + cost
local rewrite = ln > 0 and now <= lnewest
local last = ln
if rewrite then last = ln - 1 end
local drop, base
@first_after(OUT = drop, AFTER = now - $LOG_PER, FROM = 0)
if total - lbase > $LOG_LIMIT then
  local keep
  @gallop(OUT = keep, FIELD = 8, TEST = not (total - x > $LOG_LIMIT), FROM = 0)
  if keep > drop then drop = keep end
end
if drop > last then drop = last end
@cum(OUT = base, INDEX = drop - 1)
local n2 = ln - drop
if not rewrite then n2 = n2 + 1 end
if whole or (not rewrite and loff + ln >= lcap) or lcap * 2 > n2 * 3 + 48 then
  -- a new buffer: the kept entries (through the newest's time when its total is rewritten), the filed request, room
  local from, upto = le + 16 * (loff + drop), le + 16 * (loff + last) - 1
  if rewrite then upto = upto + 8 end
  local kept = ''
  if from > upto then
    kept = ''
  elseif whole then
    kept = sub(v, from, upto)
  else
    kept = redis.call('GETRANGE', key, from - 1, upto - 1)
  end
  if rewrite then kept = kept .. pack('<d', total) else kept = kept .. pack('<dd', now, total) end
  local cap = n2
  if $FIXED + 16 * n2 >= $HEAD then
    -- about 1/8 more, to the end of the allocator's size class (jemalloc: 4 classes per doubling)
    local want = $FIXED + 18 * n2
    local step = 16
    while step * 8 < want do step = step * 2 end
    cap = floor((ceil(want / step) * step - $FIXED) / 16)
    kept = kept .. string.rep('\0', 16 * (cap - n2))
  end
  v, whole, lbuf, le, loff, lcap, lwhole, cq = kept, true, kept, 1, 0, cap, true, -INF
else
  -- in place: the entry after the newest (or the newest's total), then off moves past the dropped ones
  if rewrite then
    lpos, ldata = le - 1 + 16 * (loff + ln - 1) + 8, pack('<d', total)
  else
    lpos, ldata = le - 1 + 16 * (loff + ln), pack('<dd', now, total)
  end
  loff = loff + drop
end
if not rewrite then lnewest = now end
ln, lbase, ltotal, lcharged, ldrop = n2, base, total, true, drop

--@@ report
-- after a filing the window's first entry is the same one, ldrop entries nearer the front (or the oldest, when the
-- trim dropped entries of the window): the pushed entry is newer than the window's start, and a trim drops a prefix
local used = $USED
if lcharged then
  local k, before = $K - ldrop
  if k < 0 then k = 0 end
  @cum(OUT = before, INDEX = k - 1)
  used = ltotal - before
end
$REM = floor($LIMIT - used + $SLACK)
if not ($REM > 0) then $REM = 0 end
if allowed or used + cost <= $LIM_SLACK then
  $WAIT = 0
elseif cost > $LIM_SLACK then
  $WAIT = INF
else
  -- the entries slide out oldest first until the total before the window reaches total + cost − limit; the last of
  -- them, entry k, leaves the window at time(k) + per
  local k, t
  @gallop(OUT = k, FIELD = 8, TEST = x >= ltotal + cost - $LIMIT - $SLACK, FROM = $BACK)
  @entry(OUT = t, INDEX = k, FIELD = 0)
  $WAIT = t + $PER - now
end
if used > 0 then $RESET = lnewest + $PER - now else $RESET = 0 end

--@@ refund
-- gives back cost: removes the newest entries worth it (the newest remaining one keeps what is left of it), as
-- Log.refund does; never below an empty log. In place: n shrinks, and the newest kept entry's total is rewritten.
if ln > 0 and cost > 0 then
  local target = ltotal - cost
  local eps = (abs(ltotal) + cost) * 1e-12
  local rk, before
  -- rk: the oldest entry whose running total is over the target (the newest ones: a search from the newest)
  @gallop(OUT = rk, FIELD = 8, TEST = x > target + eps, FROM = 1)
  @cum(OUT = before, INDEX = rk - 1)
  if before >= target - eps then
    if rk == 0 then
      loff, ln, lbase, ltotal, lnewest = 0, 0, 0, 0, -INF
    else
      local tk
      @entry(OUT = tk, INDEX = rk - 1, FIELD = 0)
      ln, ltotal, lnewest = rk, before, tk
    end
  else
    local tk
    @entry(OUT = tk, INDEX = rk, FIELD = 0)
    lpos, ldata = le - 1 + 16 * (loff + rk) + 8, pack('<d', target)
    ln, ltotal, lnewest = rk + 1, target, tk
  end
  lcharged = true
end

--@@ store_live
-- (refund) a state changed under a live block or exemption: the override's se (the state's end on the server's clock)
-- renewed, the state and the log's header written after the override's header, the rewritten entry; the key expires
-- at the later of the override's and the state's ends
if live and changed then
  @policy.live_ends
  if d > w then
    redis.call('SETRANGE', key, 18, pack('<d', se))
    redis.call('SETRANGE', key, at - 1, $STATE_BODY_HEAD)
    if lpos then redis.call('SETRANGE', key, lpos, ldata) end
    if d - w > 1e13 then redis.call('PERSIST', key) else redis.call('PEXPIRE', key, ceil(d - w)) end
  else
    redis.call('DEL', key)
  end
end

--@@ store
-- the value: whole (one SET) when the log's buffer was built anew, else in place — the head (SETRANGE at 0: the
-- state and the log's header), the filed entry, and the expiry
if lwhole then
  if fresh > 1e13 then
    redis.call('SET', key, $STATE_HEAD .. lbuf)
  else
    redis.call('SET', key, $STATE_HEAD .. lbuf, 'PX', ceil(fresh))
  end
else
  redis.call('SETRANGE', key, 0, $STATE_HEAD)
  if lpos then redis.call('SETRANGE', key, lpos, ldata) end
  if fresh > 1e13 then redis.call('PERSIST', key) else redis.call('PEXPIRE', key, ceil(fresh)) end
end

--@@ fetch
local v = redis.call('GETRANGE', key, 0, $HEAD_LAST)
local whole = #v < $HEAD
if v == '' then v = false end

--@@ reread
if not whole and rlen > 0 then
  -- the head read so far may stop in the reason: read it again, as long again as the reason
  v = redis.call('GETRANGE', key, 0, 33 + rlen + $HEAD - 1)
  whole = #v < 33 + rlen + $HEAD
end

--@@ whole
if not whole then v, whole = redis.call('GET', key), true end

--@@ unwrap
v, at = 'n' .. sub(v, at), 2

--@@ head
local le, loff, ln, lcap, lbase, ltotal, lnewest, lcharged, lwhole, lbuf, lpos, ldata, cq, ck, ldrop
@read(START = at + $STATE_BYTES)
