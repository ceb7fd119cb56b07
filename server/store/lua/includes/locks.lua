--[[
  The start lock's rules that more than one script applies (releaseLock-2.lua,
  settleStart-5.lua, beginStart-4.lua): taken only when free, released only by its holder.
]]

-- Takes a start lock for `lifetimeMs` when nobody holds it (SET NX PX); true when taken.
local function takeLock(lock, token, lifetimeMs)
  return redis.call('SET', lock, token, 'PX', lifetimeMs, 'NX') ~= false
end

-- Releases a start lock only for its holder (compare-and-DEL) and tells the callers
-- waiting for it how the holder's Start ended. The message is published either way:
-- what the holder did is true whoever holds the lock now, and a waiter that learns it
-- early only checks sooner. Answers 1 when the caller held the lock, else 0.
local function releaseLock(lock, channel, token, message)
  local held = 0
  if redis.call('GET', lock) == token then
    redis.call('DEL', lock)
    held = 1
  end
  redis.call('SPUBLISH', channel, message)
  return held
end
