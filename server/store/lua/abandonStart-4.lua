#!lua
--[[
  Ends a Start that failed before any chat could exist (the offering session has no
  workspace, or the host refused CreateChat), for the lock's holder only: the `starting`
  record its first step appended (lua/beginStart-4.lua) is abandoned, so that its
  options bind no later Start, and the lock is released (includes/locks.lua
  `releaseLock`). A Start whose options were fixed by an earlier holder (which may have
  created the chat with them) never abandons them: it has no record of its own to name.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)
  KEYS[3] lock        the start lock of (session, suggestion)
  KEYS[4] channel     the session's start-results channel

  ARGV[1] id          the suggestion's id
  ARGV[2] token       the holder's lock token
  ARGV[3] starting    the stream id of the `starting` record this Start appended
  ARGV[4] message     `<suggestion_id> released`, for the waiters

  An `abandoned` record { id, starting } is appended (not told to watchers: the lists do
  not change) only while the caller holds the lock and the offer's options are still
  that record's (projection `o:<id>`).

  Result: { abandoned, released }, each 1 or 0
]]
--- @include "locks"
--- @include "projection"

local log, proj, lock = KEYS[1], KEYS[2], KEYS[3]
local id, token, starting = ARGV[1], ARGV[2], ARGV[3]

local abandoned = 0
if redis.call('GET', lock) == token then
  local fold = catchUp(log, proj)
  if redis.call('HGET', proj, 'o:' .. id) == starting then
    local record = { 'type', 'abandoned', 'id', id, 'starting', starting, 'time', nowMs() }
    local entryId = redis.call('XADD', log, '*', unpack(record))
    applyRecord(proj, entryId, recordFields(record), fold)
    fold.m = fold.m + 1
    seal(log, proj, entryId, fold)
    abandoned = 1
  end
end
return { abandoned, releaseLock(lock, KEYS[4], token, ARGV[4]) }
