#!lua
--[[
  Writes what a reader read back from one chat's log into a workspace's inbox index:
  the chat's members become exactly the given ones, if no announcement came since the
  reader took the chat's token (store/workspace-inbox.ts). A chat left with no member
  and not pending leaves the index.

  KEYS[1] offers   the workspace's sorted set of members
  KEYS[2] chats    the workspace's chats hash
  KEYS[3] pending  the workspace's set of pending chats
  KEYS[4] docs     the workspace's hash of offer records by member

  ARGV[1] session  the chat
  ARGV[2] token    the chat's token when the reader took it
  ARGV[3] clear    '1': the read was fenced at that token, the chat is no longer pending
  ARGV[4...]       the chat's members now, each followed by its offer's record

  Result: 1 written, 0 not (an announcement came since: the chat stays pending)

  A write counts in the chats hash's `puts`, which with its `seq` versions the index
  for inboxPage-4.lua's readers.
]]
local offers, chats, pending, docs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local session, token = ARGV[1], ARGV[2]

if redis.call('HGET', chats, 't:' .. session) ~= token then
  return 0
end
local old = redis.call('HGET', chats, 'm:' .. session)
if old then
  for member in string.gmatch(old, '%S+') do
    redis.call('ZREM', offers, member)
    redis.call('HDEL', docs, member)
  end
end
redis.call('HINCRBY', chats, 'puts', 1)
local members = {}
for i = 4, #ARGV - 1, 2 do
  members[#members + 1] = ARGV[i]
  redis.call('ZADD', offers, 0, ARGV[i])
  redis.call('HSET', docs, ARGV[i], ARGV[i + 1])
end
if ARGV[3] == '1' then
  redis.call('SREM', pending, session)
end
if #members > 0 then
  redis.call('HSET', chats, 'm:' .. session, table.concat(members, ' '))
else
  redis.call('HDEL', chats, 'm:' .. session)
  if redis.call('SISMEMBER', pending, session) == 0 then
    redis.call('HDEL', chats, 't:' .. session)
  end
end
return 1
