-- The embedded host's writes (host/embedded-host.ts), for createChat-2.lua and
-- postMessage-3.lua.

-- The host's records of a chat expire as the chat's own keys do (renewChat: `retention`
-- ms, RETENTION_DAYS, from now after each write; '0', '' or none: none is set).
--- @include "retention"

-- Creates a chat once: its record and its session, unless the chat exists. 1: created
-- now; 0: it existed, nothing was written.
local function createChat(chatKey, sessionKey, chat, session, retention)
  if redis.call('EXISTS', chatKey) == 1 then
    return 0
  end
  redis.call('SET', chatKey, chat)
  redis.call('SET', sessionKey, session)
  renewChat(retention, chatKey, sessionKey)
  return 1
end

-- Appends a message once per message id. 0: posted now; 1: already posted with this
-- id, nothing was written; 2: no such chat (its session is the chat's existence).
local function postMessage(sessionKey, idsKey, messagesKey, messageId, message, retention)
  if redis.call('EXISTS', sessionKey) == 0 then
    return 2
  end
  if redis.call('SADD', idsKey, messageId) == 0 then
    return 1
  end
  redis.call('RPUSH', messagesKey, message)
  renewChat(retention, sessionKey, idsKey, messagesKey)
  return 0
end
