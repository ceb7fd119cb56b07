--[[
  The projection: a cache of the fold of one session's log, kept in a hash so that the
  quota checks of a write, and the lists (list-2.lua), need no scan of the stream. It is
  only a cache: when it is missing, behind the stream (deleted, or records appended by
  another writer) or of an older format, it is caught up by folding the records it has
  not seen, with the same rules as fold.ts. Pinned by test/store/list-read.test.ts.

  Fields:
    v             format of these fields (PROJECTION_FORMAT); another one is rebuilt
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
    f:<ws>        the inbox fence of workspace ws (store/workspace-inbox.ts): writes
                  announced with a token at or below it are refused. Not part of the
                  fold: kept when the rest is folded again.
    f:*           the fence of every workspace: set when the projection is folded from
                  the first record (it may have been deleted by hand, fences and all)
                  to the server's time in microseconds plus a minute, above every token
                  handed out before (tokens are at least their server's time: see
                  lua/announce-2.lua)
]]

-- Bumped whenever the fields above change meaning, so that a projection written by an
-- older version is folded again from the stream rather than read wrongly.
local PROJECTION_FORMAT = '2'

local function recordFields(flat)
  local f = {}
  for i = 1, #flat, 2 do
    f[flat[i]] = flat[i + 1]
  end
  return f
end

-- Folds one stream entry into the projection; unknown kinds and records that do not
-- fit change nothing. Answers true when the entry changed the list.
local function applyRecord(proj, entryId, f)
  local id = f['id']
  if id == nil or id == '' then
    return false
  end
  if f['type'] == 'offered' then
    if redis.call('HEXISTS', proj, 's:' .. id) == 1 then
      return false
    end
    local n = redis.call('HINCRBY', proj, 'n', 1)
    redis.call('HSET', proj, 's:' .. id, 'open', 'e:' .. id, entryId, 'i:' .. n, id)
    redis.call('HINCRBY', proj, 'open', 1)
    local turn = f['turn']
    if turn ~= nil and turn ~= '' then
      redis.call('HSETNX', proj, 't:' .. turn, id)
    end
    local call = f['call']
    if call ~= nil and call ~= '' then
      redis.call('HSETNX', proj, 'c:' .. call, id)
    end
    return true
  elseif f['type'] == 'settled' then
    local state = redis.call('HGET', proj, 's:' .. id)
    local outcome = f['outcome']
    if state == 'open' and (outcome == 'started' or outcome == 'drafted' or outcome == 'dismissed') then
      redis.call('HSET', proj, 's:' .. id, outcome, 'a:' .. id, entryId)
      redis.call('HINCRBY', proj, 'open', -1)
      if outcome == 'started' then
        redis.call('HSET', proj, 'k:' .. id, f['chat'] or '')
      end
      return true
    elseif state == 'dismissed' and outcome == 'restored' then
      redis.call('HSET', proj, 's:' .. id, 'open')
      redis.call('HDEL', proj, 'a:' .. id)
      redis.call('HINCRBY', proj, 'open', 1)
      return true
    end
  end
  return false
end

-- Deletes the fold, keeping the inbox fences (f:<ws>), which no record holds.
local function resetProjection(proj)
  local flat = redis.call('HGETALL', proj)
  redis.call('DEL', proj)
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 2) == 'f:' then
      redis.call('HSET', proj, flat[i], flat[i + 1])
    end
  end
end

-- Brings the projection up to the end of the log: O(1) when it is current, else
-- O(records not folded yet).
local function catchUp(log, proj)
  local last = redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)
  local head = redis.call('HMGET', proj, 'seen', 'v')
  local seen = head[1]
  if #last == 0 then
    if seen or head[2] then
      resetProjection(proj)
    end
    return
  end
  if not seen or head[2] ~= PROJECTION_FORMAT then
    -- Missing, partial or of another format: folded again from the first record. The
    -- inbox fences may have gone with it: every token handed out so far is fenced.
    resetProjection(proj)
    seen = false
    local t = redis.call('TIME')
    local floor = tonumber(t[1]) * 1000000 + tonumber(t[2]) + 60000000
    if floor > tonumber(redis.call('HGET', proj, 'f:*') or '0') then
      redis.call('HSET', proj, 'f:*', string.format('%.0f', floor))
    end
  end
  if seen == last[1][1] then
    return
  end
  local from = '-'
  if seen then
    from = '(' .. seen
  end
  local entries = redis.call('XRANGE', log, from, '+')
  for i = 1, #entries do
    applyRecord(proj, entries[i][1], recordFields(entries[i][2]))
  end
  redis.call('HSET', proj, 'seen', last[1][1], 'v', PROJECTION_FORMAT)
end

-- Appends a record, folds it into the projection, tells watchers; answers its stream id.
local function appendRecord(log, proj, changes, flat)
  local entryId = redis.call('XADD', log, '*', unpack(flat))
  applyRecord(proj, entryId, recordFields(flat))
  redis.call('HSET', proj, 'seen', entryId, 'v', PROJECTION_FORMAT)
  redis.call('PUBLISH', changes, entryId)
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

-- Milliseconds since the epoch by the Redis server's clock, as a string.
local function nowMs()
  local t = redis.call('TIME')
  return tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
