-- Keeping the projection right: its head checked against itself and the log before
-- use (`intact`), rebuilt from the log when it is not, caught up with the records it
-- has not folded (`catchUp`), and sealed after each fold or append (`seal`).

-- Bumped whenever the fields of includes/projection.lua change meaning, so that a projection written by an
-- older version is folded again from the stream rather than read wrongly.
local PROJECTION_FORMAT = '7'

-- How many offers' ids `intact` reads with the head (i:1 to i:10).
local HEAD_OFFERS = 10
local HEAD_ORDER = {}
for i = 1, HEAD_OFFERS do
  HEAD_ORDER[i] = 'i:' .. i
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
