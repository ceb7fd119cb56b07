--[[
  The embedded host's PostMessage: appends a message once per message id. The message
  id is derived from (chat, idempotency key) by the caller, so a retried call finds it
  posted already.

  KEYS[1] session     the chat's session: a chat exists when its session does
  KEYS[2] messageIds  the set of message ids already posted to the chat
  KEYS[3] messages    the chat's messages, oldest first (serialized ChatMessages)

  ARGV[1] message id
  ARGV[2] message     the serialized ChatMessage

  Result:
    0  posted now
    1  already posted with this id; nothing was written
    2  no such chat
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 2
end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then
  return 1
end
redis.call('RPUSH', KEYS[3], ARGV[2])
return 0
