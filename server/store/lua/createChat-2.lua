#!lua
--[[
  The embedded host's CreateChat: creates a chat once per idempotency key. The chat id
  is derived from the key by the caller, so a retried or concurrent call with the same
  key lands on these same keys and finds the chat already there.

  KEYS[1] chat     the chat's record (a serialized Chat without messages)
  KEYS[2] session  the chat's session (a serialized Session): a started chat is itself a
                   session that can offer suggestions

  ARGV[1] chat     the serialized Chat to store
  ARGV[2] session  the serialized Session to store
  ARGV[3] retention (optional) ms the two records live (0: forever)

  Result:
    1  created now
    0  the chat already existed; nothing was written
]]
--- @include "host"

return createChat(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
