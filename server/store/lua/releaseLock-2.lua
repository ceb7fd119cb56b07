--[[
  Releases a start lock, only for its holder (compare-and-DEL), and tells the callers
  waiting for it how the holder's Start ended.

  KEYS[1] lock     the start lock of one (session, suggestion)
  KEYS[2] channel  the session's start-results channel

  ARGV[1] token    the holder's random token
  ARGV[2] message  `<suggestion_id> delivered` (the brief is posted) or
                   `<suggestion_id> released` (the holder stopped; a waiter may take over)

  Result:
    1  released: the caller held the lock and it is gone
    0  not held: the lock had expired or another caller holds it, and it is left alone
  The message is published either way: what the holder did is true whoever holds the
  lock now, and a waiter that learns it early only checks sooner.
]]
local held = 0
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  held = 1
end
redis.call('PUBLISH', KEYS[2], ARGV[2])
return held
