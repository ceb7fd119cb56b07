-- The workspace inbox's fences in a session's projection (`f:<ws>`, `f:*`) and the
-- offer's workspace they are checked against (store/workspace-inbox.ts).

-- Folded again from the first record: the inbox fences may have gone with the fold (a
-- hash deleted by hand), so every token handed out so far is fenced.
local function fenceEveryToken(proj)
  local t = redis.call('TIME')
  local floor = tonumber(t[1]) * 1000000 + tonumber(t[2]) + 60000000
  if floor > tonumber(redis.call('HGET', proj, 'f:*') or '0') then
    redis.call('HSET', proj, 'f:*', string.format('%.0f', floor))
  end
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
