--[[
  The inbox announcement (store/workspace-inbox.ts) that announce-2.lua makes.
]]

-- Marks `session` pending in the workspace whose chats hash and pending set are given,
-- with a new token: above every token handed out before in the workspace, at least the
-- server's time in microseconds (so tokens handed out after the index was deleted are
-- still above those handed out before: a rebuild's fences then refuse the writes in
-- flight across the deletion), and at least `minimum`. Answers the token as a string.
local function announceChat(chats, pending, session, minimum)
  local time = redis.call('TIME')
  local token = math.max(
    tonumber(redis.call('HGET', chats, 'seq') or '0') + 1,
    tonumber(time[1]) * 1000000 + tonumber(time[2]),
    tonumber(minimum)
  )
  token = string.format('%.0f', token)
  redis.call('HSET', chats, 'seq', token, 't:' .. session, token)
  redis.call('SADD', pending, session)
  return token
end
