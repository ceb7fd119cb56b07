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
  ARGV[6..] the caller's start options as record fields (`model`, `perm`, `brief`, each
          only when chosen; domain/start-options.ts `optionFields`)

  When the lock is taken and the offer has no `starting` record yet, one is appended
  with the caller's options (not told to watchers: the lists do not change): the
  options are fixed before the chat is created, so a later holder (this one stalled
  past its lock, or crashed after CreateChat) creates, records and posts with the same
  ones, and the first Start's options win.

  Result: { session, taken, read, options, appended }
    session  the session record in hex; '' when absent or not asked
    taken    1 when the lock was taken for the caller (or was the caller's already);
             0 when the offer is not open or another caller holds the lock
    read     readSuggestion-2.lua's reply { version, offer, settlement }
    options  with the lock taken: the fields of the offer's first `starting` record
             (the one appended now, or an earlier holder's); else {}
    appended the stream id of the `starting` record appended now ('' when none was):
             the one this Start may abandon (lua/abandonStart-4.lua) if it fails
             before any chat can exist
]]
--- @include "locks"
--- @include "projection"

local function read()
--- @script "readSuggestion-2"
end

local suggestion = read()
local taken = 0
-- Taken now, or already the caller's (it took the lock after waiting, and begins again).
local function lockFor(token)
  return takeLock(KEYS[3], token, ARGV[4]) or redis.call('GET', KEYS[3]) == token
end
if redis.call('HGET', KEYS[2], 's:' .. ARGV[1]) == 'open' and lockFor(ARGV[3]) then
  taken = 1
end
local options = {}
local appended = ''
if taken == 1 then
  local starting = redis.call('HGET', KEYS[2], 'o:' .. ARGV[1])
  if starting then
    local entry = redis.call('XRANGE', KEYS[1], starting, starting)[1]
    options = entry and entry[2] or {}
  else
    local record = { 'type', 'starting', 'id', ARGV[1] }
    for i = 6, #ARGV do
      record[#record + 1] = ARGV[i]
    end
    record[#record + 1] = 'time'
    record[#record + 1] = nowMs()
    -- Caught up by the read above, and nothing came between (one script).
    local fold = catchUp(KEYS[1], KEYS[2])
    local entryId = redis.call('XADD', KEYS[1], '*', unpack(record))
    applyRecord(KEYS[2], entryId, recordFields(record), fold)
    fold.m = fold.m + 1
    seal(KEYS[1], KEYS[2], entryId, fold)
    options = record
    appended = entryId
  end
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
return { session, taken, suggestion, options, appended }
