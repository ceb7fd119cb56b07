--[[
  Announces a chat in a workspace's inbox index before an offer or a restore is
  appended to its log (store/workspace-inbox.ts): the chat is marked pending, so that
  the next read reads it back from its log, and gets a new token, which the append
  checks against the chat's fence.

  KEYS[1] chats    the workspace's chats hash (seq, t:<session>, m:<session>)
  KEYS[2] pending  the workspace's set of pending chats

  ARGV[1] session  the chat
  ARGV[2] minimum  the least token to hand out ('0': any); a fenced writer passes its
                   fence + 1, so tokens stay above fences after the index was deleted

  Result: the token (an integer), above every token handed out before in the workspace
  and at least the server's time in microseconds, so that tokens handed out after the
  index was deleted are still above those handed out before (a rebuild's fences then
  refuse the writes in flight across the deletion)
]]
local chats, pending = KEYS[1], KEYS[2]
local session = ARGV[1]

local time = redis.call('TIME')
local token = math.max(
  tonumber(redis.call('HGET', chats, 'seq') or '0') + 1,
  tonumber(time[1]) * 1000000 + tonumber(time[2]),
  tonumber(ARGV[2])
)
token = string.format('%.0f', token)
redis.call('HSET', chats, 'seq', token)
redis.call('HSET', chats, 't:' .. session, token)
redis.call('SADD', pending, session)
return tonumber(token)
