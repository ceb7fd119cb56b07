#!lua
--[[
  StartSuggestion's `started` step and the end of the holder's lock, as one script:
  settleAndRead-3.lua (settle-3.lua with outcome started, then readSuggestion-2.lua of
  the suggestion), then the lock released with the caller's message
  (includes/locks.lua `releaseLock`), unless the settlement must first be announced in
  the offer's workspace inbox (status FENCED: the caller repeats it, still holding the
  lock). Once `started` is recorded (or the offer turned out not open) the lock has
  nothing left to guard: the brief is posted after it by an idempotent call, and a
  waiter that hears `released` reads the suggestion and makes sure of the brief itself.

  KEYS[1..3]  as settle-3.lua (log, projection, changes)
  KEYS[4]     the start lock of (session, suggestion)
  KEYS[5]     the session's start-results channel

  ARGV[1..8]  as settle-3.lua (ARGV[1] is the suggestion's id, as readSuggestion-2.lua's)
  ARGV[9]     the holder's lock token
  ARGV[10]    the message to publish (`<suggestion_id> released`)
  ARGV[11]    (optional) retention, settle-3.lua's ARGV[9] (its place here is the token's:
              it is handed to settle-3.lua there, and the token put back after)

  Result: { settle-3.lua's reply, readSuggestion-2.lua's reply, held }
    held  1: the lock was the caller's and is gone; 0: it had lapsed or was another's;
          -1: kept (FENCED)
]]
--- @include "locks"

local function settleAndRead()
--- @script "settleAndRead-3"
end

local token = ARGV[9]
ARGV[9] = ARGV[11]
local both = settleAndRead()
ARGV[9] = token
local held = -1
if both[1][1] ~= 5 then
  held = releaseLock(KEYS[4], KEYS[5], ARGV[9], ARGV[10])
end
return { both[1], both[2], held }
