-- The embedded host's writes (host/embedded-host.ts), for createChat-2.lua and
-- postMessage-3.lua.

-- Sets the expiry of the host's records of a chat after a write: `retention` ms
-- (RETENTION_DAYS) from now; '0', '' or none: none is set.
local function renewHost(retention, ...)
  local ms = tonumber(retention or '0') or 0
  if ms > 0 then
    for _, key in ipairs({ ... }) do
      redis.call('PEXPIRE', key, ms)
    end
  end
end

-- Creates a chat once: its record and its session, unless the chat exists. 1: created
-- now; 0: it existed, nothing was written.
local function createChat(chatKey, sessionKey, chat, session, retention)
  if redis.call('EXISTS', chatKey) == 1 then
    return 0
  end
  redis.call('SET', chatKey, chat)
  redis.call('SET', sessionKey, session)
  renewHost(retention, chatKey, sessionKey)
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
  renewHost(retention, sessionKey, idsKey, messagesKey)
  return 0
end
