-- The embedded host's writes (host/embedded-host.ts), for createChat-2.lua,
-- postMessage-3.lua and settleStartEmbedded-9.lua.

-- Creates a chat once: its record and its session, unless the chat exists. 1: created
-- now; 0: it existed, nothing was written.
local function createChat(chatKey, sessionKey, chat, session)
  if redis.call('EXISTS', chatKey) == 1 then
    return 0
  end
  redis.call('SET', chatKey, chat)
  redis.call('SET', sessionKey, session)
  return 1
end

-- Appends a message once per message id. 0: posted now; 1: already posted with this
-- id, nothing was written; 2: no such chat (its session is the chat's existence).
local function postMessage(sessionKey, idsKey, messagesKey, messageId, message)
  if redis.call('EXISTS', sessionKey) == 0 then
    return 2
  end
  if redis.call('SADD', idsKey, messageId) == 0 then
    return 1
  end
  redis.call('RPUSH', messagesKey, message)
  return 0
end
