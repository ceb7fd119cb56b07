--[[
  The projection: a cache of the fold of one session's log, kept in a hash so that the
  quota checks of a write need no scan of the stream. It is only a cache: when it is
  missing or behind the stream (deleted, or records appended by another writer), it is
  caught up by folding the records it has not seen, with the same rules as fold.ts.

  Fields:
    seen          id of the last stream entry folded
    n             offers recorded (valid `offered` records)
    open          offers open now
    s:<id>        standing of an offer: open | started | drafted | dismissed
    e:<id>        stream id of the offer's record
    k:<id>        chat id of a started offer
    t:<turn_id>   id of the first offer of that turn
    c:<call_id>   id of the offer that tool call recorded
]]

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
    redis.call('HSET', proj, 's:' .. id, 'open', 'e:' .. id, entryId)
    redis.call('HINCRBY', proj, 'n', 1)
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
      redis.call('HSET', proj, 's:' .. id, outcome)
      redis.call('HINCRBY', proj, 'open', -1)
      if outcome == 'started' then
        redis.call('HSET', proj, 'k:' .. id, f['chat'] or '')
      end
      return true
    elseif state == 'dismissed' and outcome == 'restored' then
      redis.call('HSET', proj, 's:' .. id, 'open')
      redis.call('HINCRBY', proj, 'open', 1)
      return true
    end
  end
  return false
end

-- Brings the projection up to the end of the log.
local function catchUp(log, proj)
  local last = redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)
  local seen = redis.call('HGET', proj, 'seen')
  if #last == 0 then
    if seen then
      redis.call('DEL', proj)
    end
    return
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
  redis.call('HSET', proj, 'seen', last[1][1])
end

-- Appends a record, folds it into the projection, tells watchers; answers its stream id.
local function appendRecord(log, proj, changes, flat)
  local entryId = redis.call('XADD', log, '*', unpack(flat))
  applyRecord(proj, entryId, recordFields(flat))
  redis.call('HSET', proj, 'seen', entryId)
  redis.call('PUBLISH', changes, entryId)
  return entryId
end

-- Milliseconds since the epoch by the Redis server's clock, as a string.
local function nowMs()
  local t = redis.call('TIME')
  return tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
