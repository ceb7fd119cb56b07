--[[
  The projection: a cache of the fold of one session's log, kept in a hash so that the
  quota checks of a write, and the lists (readLists-2.lua), need no scan of the stream.
  It is only a cache: when it is missing, behind the stream (deleted, or records appended
  by another writer) or of an older format, it is caught up by folding the records it
  has not seen, with the same rules as fold.ts. Pinned by test/store/list-read.test.ts.

  It heals: every script checks it against itself and the log before use (`intact`),
  and rebuilds it from the log in the same script when a field is missing, a counter
  disagrees with the fields it counts, it was folded from another log (copied onto this
  chat's key), or the log lost entries it had folded (XDEL).
  Pinned by test/store/projection-heal.test.ts, which deletes each field in turn.

  Fields:
    v             format of these fields (PROJECTION_FORMAT); another one is rebuilt
    l             the key of the log it folds: a projection copied from another chat's
                  key names that chat's log, and is rebuilt, even when the two logs end
                  at the same entry id after as many entries
    h             the hash's own field count (HLEN) after the last write: a deleted
                  field of any kind shows as a difference
    m             stream entries folded: XLEN must equal it once caught up, or the log
                  lost entries (XDEL) and the projection is rebuilt
    seen          id of the last stream entry folded
    n             offers recorded (valid `offered` records)
    open          offers open now
    i:<n>         id of the n-th offer recorded (1 to n): the offer order of the lists
    s:<id>        standing of an offer: open | started | drafted | dismissed
    e:<id>        stream id of the offer's record
    a:<id>        stream id of the settlement the offer stands by (absent while open)
    k:<id>        chat id of a started offer
    t:<turn_id>   id of the first offer of that turn
    c:<call_id>   id of the offer that tool call recorded
    u:<id>        the offer's normalized title (its record's `nt`: trimmed, lower-cased,
                  inner white space collapsed, computed by the service); absent for an
                  offer recorded before the field existed, which no title repeats
    x:<id>        present while the offer stands dismissed by the agent (withdrawn):
                  a title that repeats it is no duplicate
    o:<id>        stream id of the offer's first `starting` record: the options its
                  Start was fixed with (lua/beginStart-4.lua), whichever Start comes
                  later; removed by an `abandoned` record naming it (its Start failed
                  before any chat could exist: lua/abandonStart-4.lua), after which the
                  next Start's `starting` record is the first
    w:<call_id>   stream id of the settlement that withdraw_suggestion call recorded
    r:<entry id>  present for each `settled` record the fold did not accept (it names
                  no offer yet, or does not fit its standing): every other `settled`
                  record with an id was accepted, which ListSettlements reads
                  (settlements-2.lua) without folding the records before its cursor
    f:<ws>        the inbox fence of workspace ws (store/workspace-inbox.ts): writes
                  announced with a token at or below it are refused. Not part of the
                  fold: kept when the rest is folded again (lua/inboxChat-2.lua, which
                  sets it, counts it in `h`).
    f:*           the fence of every workspace: set when the projection is folded from
                  the first record (it may have been deleted by hand, fences and all)
                  to the server's time in microseconds plus a minute, above every token
                  handed out before (tokens are at least their server's time: see
                  lua/announce-2.lua)
]]

-- Bumped whenever the fields above change meaning, so that a projection written by an
-- older version is folded again from the stream rather than read wrongly.
local PROJECTION_FORMAT = '7'

-- How many offers' ids `intact` reads with the head (i:1 to i:10).
local HEAD_OFFERS = 10
local HEAD_ORDER = {}
for i = 1, HEAD_OFFERS do
  HEAD_ORDER[i] = 'i:' .. i
end

local function recordFields(flat)
  local f = {}
  for i = 1, #flat, 2 do
    f[flat[i]] = flat[i + 1]
  end
  return f
end

-- Folds one stream entry into the projection; unknown kinds and records that do not
-- fit change nothing. `fold` is the projection's head as `catchUp` answers it: its
-- counters are kept there and written with the fields they count. `new` (an append whose
-- script checked that no offer of this id, turn or tool call is recorded) spares the
-- checks the fold would make. Answers true when the entry changed the list.
local function applyRecord(proj, entryId, f, fold, new)
  local id = f['id']
  if id == nil or id == '' then
    return false
  end
  if f['type'] == 'offered' then
    if not new and redis.call('HEXISTS', proj, 's:' .. id) == 1 then
      return false
    end
    fold.n = fold.n + 1
    fold.open = fold.open + 1
    local fields = {
      's:' .. id, 'open', 'e:' .. id, entryId, 'i:' .. fold.n, id, 'n', fold.n, 'open', fold.open,
    }
    local nt = f['nt']
    if nt ~= nil and nt ~= '' then
      fields[#fields + 1] = 'u:' .. id
      fields[#fields + 1] = nt
    end
    local turn, call = f['turn'] or '', f['call'] or ''
    if new then
      -- The first offer of its turn and of its tool call: the script checked both.
      if turn ~= '' then
        fields[#fields + 1] = 't:' .. turn
        fields[#fields + 1] = id
      end
      if call ~= '' then
        fields[#fields + 1] = 'c:' .. call
        fields[#fields + 1] = id
      end
    end
    redis.call('HSET', proj, unpack(fields))
    if not new and turn ~= '' then
      redis.call('HSETNX', proj, 't:' .. turn, id)
    end
    if not new and call ~= '' then
      redis.call('HSETNX', proj, 'c:' .. call, id)
    end
    return true
  elseif f['type'] == 'settled' then
    local state = redis.call('HGET', proj, 's:' .. id)
    local outcome = f['outcome']
    if state == 'open' and (outcome == 'started' or outcome == 'drafted' or outcome == 'dismissed') then
      fold.open = fold.open - 1
      local fields = { 's:' .. id, outcome, 'a:' .. id, entryId, 'open', fold.open }
      if outcome == 'started' then
        fields[#fields + 1] = 'k:' .. id
        fields[#fields + 1] = f['chat'] or ''
      end
      if outcome == 'dismissed' and f['by'] == 'agent' then
        fields[#fields + 1] = 'x:' .. id
        fields[#fields + 1] = '1'
      end
      redis.call('HSET', proj, unpack(fields))
      local call = f['call']
      if f['by'] == 'agent' and call ~= nil and call ~= '' then
        redis.call('HSETNX', proj, 'w:' .. call, entryId)
      end
      return true
    elseif state == 'dismissed' and outcome == 'restored' then
      fold.open = fold.open + 1
      redis.call('HSET', proj, 's:' .. id, 'open', 'open', fold.open)
      redis.call('HDEL', proj, 'a:' .. id, 'x:' .. id)
      return true
    end
    redis.call('HSET', proj, 'r:' .. entryId, '1')
  elseif f['type'] == 'starting' then
    -- The first Start's options of an open offer; later ones change nothing.
    if redis.call('HGET', proj, 's:' .. id) == 'open' then
      redis.call('HSETNX', proj, 'o:' .. id, entryId)
    end
  elseif f['type'] == 'abandoned' then
    -- The Start of that `starting` record failed before any chat could exist: its
    -- options bind no later Start (lua/abandonStart-4.lua).
    if f['starting'] ~= nil and redis.call('HGET', proj, 'o:' .. id) == f['starting'] then
      redis.call('HDEL', proj, 'o:' .. id)
    end
  end
  return false
end

-- HMGET of many fields, in chunks that keep unpack within Lua's stack.
local function hmget(proj, fields)
  local values = {}
  for from = 1, #fields, 1000 do
    local chunk = redis.call('HMGET', proj, unpack(fields, from, math.min(from + 999, #fields)))
    for i = 1, #chunk do
      values[#values + 1] = chunk[i]
    end
  end
  return values
end

-- Deletes the fold, keeping the inbox fences (f:<ws>), which no record holds.
local function resetProjection(proj)
  if redis.call('EXISTS', proj) == 0 then
    return
  end
  local flat = redis.call('HGETALL', proj)
  redis.call('DEL', proj)
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 2) == 'f:' then
      redis.call('HSET', proj, flat[i], flat[i + 1])
    end
  end
end

-- Folded again from the first record: the inbox fences may have gone with the fold (a
-- hash deleted by hand), so every token handed out so far is fenced.
local function fenceEveryToken(proj)
  local t = redis.call('TIME')
  local floor = tonumber(t[1]) * 1000000 + tonumber(t[2]) + 60000000
  if floor > tonumber(redis.call('HGET', proj, 'f:*') or '0') then
    redis.call('HSET', proj, 'f:*', string.format('%.0f', floor))
  end
end

-- A counter's value as the scripts write it (a whole number, at least 0), else nil.
local function count(value)
  local number = tonumber(value)
  if number and number >= 0 and number == math.floor(number) and tostring(number) == value then
    return number
  end
  return nil
end

-- The projection's head when it agrees with itself (its field count, its counters and
-- every offer's fields) and was folded from `log`, else nil: { n, open, m (entries
-- folded), seen (the last one's id) }. O(offers) (ten at most under today's limit).
local function intact(log, proj)
  -- The head and the first offers' ids in one read (HEAD_OFFERS of them: the lifetime
  -- limit's default), the rest after it when a log holds more.
  local head = redis.call('HMGET', proj, 'v', 'h', 'm', 'seen', 'n', 'open', 'l', unpack(HEAD_ORDER))
  local n, open, m = count(head[5]), count(head[6]), count(head[3])
  if head[1] ~= PROJECTION_FORMAT or head[7] ~= log or not (n and open and m and head[4]) then
    return nil
  end
  if tonumber(head[2]) ~= redis.call('HLEN', proj) then
    return nil
  end
  local fold = { n = n, open = open, m = m, seen = head[4] }
  if n == 0 then
    return open == 0 and fold or nil
  end
  local ids = {}
  for i = 1, math.min(n, HEAD_OFFERS) do
    ids[i] = head[7 + i]
  end
  if n > HEAD_OFFERS then
    local order = {}
    for i = HEAD_OFFERS + 1, n do
      order[#order + 1] = 'i:' .. i
    end
    for _, id in ipairs(hmget(proj, order)) do
      ids[#ids + 1] = id
    end
  end
  local refs = {}
  for i = 1, n do
    local id = ids[i]
    if not id then
      return nil
    end
    refs[#refs + 1] = 's:' .. id
    refs[#refs + 1] = 'e:' .. id
    refs[#refs + 1] = 'a:' .. id
    refs[#refs + 1] = 'k:' .. id
  end
  local f = hmget(proj, refs)
  local counted = 0
  local states = {}
  for i = 0, n - 1 do
    local state, offer, settlement, chat = f[4 * i + 1], f[4 * i + 2], f[4 * i + 3], f[4 * i + 4]
    if not state or not offer or (state == 'open') ~= (settlement == false) then
      return nil
    end
    if (state == 'started') ~= (chat ~= false) then
      return nil
    end
    if state == 'open' then
      counted = counted + 1
    end
    states[i + 1] = state
  end
  -- The offers' ids and standings, in offer order, as read here: valid while nothing is
  -- folded after this read (`catchUp` drops them when it folds), for a script that
  -- needs them (offer-3.lua's duplicate check) without reading them again.
  fold.ids, fold.states = ids, states
  return counted == open and fold or nil
end

-- Records how far the projection has folded `log` (`fold`, its counters included, which
-- exist even before the first offer: a log of other records only) and its own field count.
local function seal(log, proj, entryId, fold)
  redis.call('HSET', proj, 'seen', entryId, 'v', PROJECTION_FORMAT, 'l', log, 'm', fold.m,
    'n', fold.n, 'open', fold.open, 'h', 0)
  redis.call('HSET', proj, 'h', redis.call('HLEN', proj))
  fold.seen = entryId
  -- A projection folded anew lives no longer than its log (RETENTION_DAYS).
  local ttl = redis.call('PTTL', log)
  if ttl > 0 then
    redis.call('PEXPIRE', proj, ttl)
  end
end

-- Folds the entries after `from` ('-': all) into the projection; answers how many.
local function foldFrom(log, proj, from, fold)
  local entries = redis.call('XRANGE', log, from, '+')
  for i = 1, #entries do
    applyRecord(proj, entries[i][1], recordFields(entries[i][2]), fold)
  end
  return #entries
end

-- The log's tip: the id of its last entry (nil when it has none) and its length.
local function logTip(log)
  local last = redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)[1]
  if not last then
    return { length = 0 }
  end
  return { id = last[1], length = redis.call('XLEN', log) }
end

-- Brings the projection up to the end of the log, healing it first when it is not
-- intact: O(offers) when it is current, else O(records not folded yet); a rebuild is
-- O(records). `tip` is the log's as `logTip` read it in this script, if it did. Answers
-- the projection's head as `intact` reads it, with `empty` true for an empty log (whose
-- projection holds no offer, no turn and no tool call).
local function catchUp(log, proj, tip)
  tip = tip or logTip(log)
  if not tip.id then
    resetProjection(proj)
    return { n = 0, open = 0, m = 0, empty = true }
  end
  local lastId, length = tip.id, tip.length
  local fold = intact(log, proj)
  if not fold then
    resetProjection(proj)
  end
  if fold and fold.seen == lastId and fold.m == length then
    return fold
  end
  if fold then
    fold.ids, fold.states = nil, nil
  end
  if fold then
    fold.m = fold.m + foldFrom(log, proj, '(' .. fold.seen, fold)
  end
  if not fold or fold.m ~= length then
    -- Never folded, or the log lost entries it had folded: again from the first record.
    resetProjection(proj)
    fenceEveryToken(proj)
    fold = { n = 0, open = 0 }
    fold.m = foldFrom(log, proj, '-', fold)
  end
  seal(log, proj, lastId, fold)
  return fold
end

-- Appends a record, folds it into the projection, tells watchers; answers its stream id.
-- `fold` is what `catchUp` answered, so the projection has folded every entry before
-- this one; `new` as for `applyRecord`.
local function appendRecord(log, proj, changes, flat, fold, new)
  local entryId = redis.call('XADD', log, '*', unpack(flat))
  applyRecord(proj, entryId, recordFields(flat), fold, new)
  fold.m = fold.m + 1
  seal(log, proj, entryId, fold)
  redis.call('SPUBLISH', changes, entryId)
  return entryId
end

-- The inbox fence of workspace ws (0 when none): a write announced with a token at or
-- below it must be announced again (store/workspace-inbox.ts).
local function inboxFence(proj, ws)
  local fences = redis.call('HMGET', proj, 'f:' .. ws, 'f:*')
  return math.max(tonumber(fences[1] or '0'), tonumber(fences[2] or '0'))
end

-- The workspace an offer's record names ('' for none, or an offer recorded before it).
local function offerWorkspace(log, proj, id)
  local entryId = redis.call('HGET', proj, 'e:' .. id)
  if not entryId then
    return ''
  end
  local entry = redis.call('XRANGE', log, entryId, entryId)[1]
  if not entry then
    return ''
  end
  return recordFields(entry[2])['ws'] or ''
end

-- Renews the expiry of a chat's keys after a write: `retention` ms (RETENTION_DAYS) from
-- now; '0', '' or none: no expiry is set (one set earlier is left as it is).
local function renewChat(retention, ...)
  local ms = tonumber(retention or '0') or 0
  if ms > 0 then
    for _, key in ipairs({ ... }) do
      redis.call('PEXPIRE', key, ms)
    end
  end
end

-- Milliseconds since the epoch by the Redis server's clock, as a string.
local function nowMs()
  local t = redis.call('TIME')
  return tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
