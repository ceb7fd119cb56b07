#!lua
--[[
  StartSuggestion's first step, one script on the offering session's slot: the embedded
  host's record of the session (it keeps it in this slot: keys.ts `hostKeys`), the
  suggestion as readSuggestion-2.lua reads it, and, only when the offer is open, its
  start lock taken (includes/locks.lua `takeLock`). Reading the standing and taking the
  lock are one atomic step, and one round trip instead of three.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)
  KEYS[3] lock        the start lock of (session, suggestion) (keys.ts `startLockKey`)
  KEYS[4] session     the embedded host's session record (read only with ARGV[5])

  ARGV[1] id          the suggestion's id
  ARGV[2] ''          (readSuggestion-2.lua's `have`: the records are always answered)
  ARGV[3] token       the caller's random lock token
  ARGV[4] lifetime    the lock's lifetime in ms
  ARGV[5] '1': read the host's session record; '': the host is remote, leave it

  Result: { session, taken, read }
    session  the session record in hex; '' when absent or not asked
    taken    1 when the lock was taken for the caller; 0 when the offer is not open or
             another caller holds the lock
    read     readSuggestion-2.lua's reply { version, offer, settlement }
]]
--- @include "locks"

local function read()
--- @script "readSuggestion-2"
end

local suggestion = read()
local taken = 0
if redis.call('HGET', KEYS[2], 's:' .. ARGV[1]) == 'open' and takeLock(KEYS[3], ARGV[3], ARGV[4]) then
  taken = 1
end
local session = ''
if ARGV[5] == '1' then
  local record = redis.call('GET', KEYS[4])
  if record then
    session = record:gsub('.', function(c)
      return string.format('%02x', string.byte(c))
    end)
  end
end
return { session, taken, suggestion }
