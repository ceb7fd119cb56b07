#!lua
--[[
  DeleteSuggestions' step on a workspace's slot (store/chat-erasure.ts): the chat leaves
  the workspace's inbox index, its members, their offers' records, its token and its
  pending mark, so that no value of the index holds its id or its text; the index's
  version moves, and the workspace's watchers are told.

  KEYS[1] offers   the workspace's sorted set of members
  KEYS[2] chats    the workspace's chats hash
  KEYS[3] pending  the workspace's set of pending chats
  KEYS[4] docs     the workspace's hash of offer records by member

  ARGV[1] session  the chat
  ARGV[2] channel  the workspace's pub/sub channel

  Result: 1 when the index held something of the chat, else 0
]]
local offers, chats, pending, docs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local session = ARGV[1]

local members = redis.call('HGET', chats, 'm:' .. session)
if members then
  for member in string.gmatch(members, '%S+') do
    redis.call('ZREM', offers, member)
    redis.call('HDEL', docs, member)
  end
end
local held = redis.call('HDEL', chats, 'm:' .. session, 't:' .. session)
  + redis.call('SREM', pending, session)
if held > 0 then
  redis.call('HINCRBY', chats, 'puts', 1)
  redis.call('SPUBLISH', ARGV[2], '0-0')
  return 1
end
return 0
