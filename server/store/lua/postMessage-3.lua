#!lua
--[[
  The embedded host's PostMessage: appends a message once per message id. The message
  id is derived from (chat, idempotency key) by the caller, so a retried call finds it
  posted already.

  KEYS[1] session     the chat's session: a chat exists when its session does
  KEYS[2] messageIds  the set of message ids already posted to the chat
  KEYS[3] messages    the chat's messages, oldest first (serialized ChatMessages)

  ARGV[1] message id
  ARGV[2] message     the serialized ChatMessage
  ARGV[3] retention   (optional) ms the chat's records live after the post (0: forever)

  Result:
    0  posted now
    1  already posted with this id; nothing was written
    2  no such chat
]]
--- @include "host"

return postMessage(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3])
