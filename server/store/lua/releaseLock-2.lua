#!lua
--[[
  Releases a start lock, only for its holder (compare-and-DEL), and tells the callers
  waiting for it how the holder's Start ended (includes/locks.lua `releaseLock`).

  KEYS[1] lock     the start lock of one (session, suggestion)
  KEYS[2] channel  the session's start-results channel

  ARGV[1] token    the holder's random token
  ARGV[2] message  `<suggestion_id> delivered` (the brief is posted) or
                   `<suggestion_id> released` (the holder stopped; a waiter may take over)

  Result:
    1  released: the caller held the lock and it is gone
    0  not held: the lock had expired or another caller holds it, and it is left alone
]]
--- @include "locks"

return releaseLock(KEYS[1], KEYS[2], ARGV[1], ARGV[2])
