#!lua
--[[
  withdraw_suggestion's atomic step: finds the newest open offer of the session with
  exactly the given (trimmed) title and records its dismissal by the agent, or answers
  the first result of a retried call. The lookup and the append are one step, so a
  person's settlement of the same offer at the same moment is never lost: one of the two
  comes first and the other finds the offer no longer open.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)
  KEYS[3] changes     the session's pub/sub channel

  ARGV[1] title        trimmed
  ARGV[2] reason       trimmed
  ARGV[3] tool_call_id (empty: no retry protection)
  ARGV[4] token        the inbox token of the chat's announcement in the offer's
                       workspace ('': none yet), as for settle-3.lua
  ARGV[5], ARGV[6]     the parts around the workspace id of a workspace's channel
                       (both '': the caller tells the workspace, as for settle-3.lua)
  ARGV[7]              (optional) the workspace the token was announced in, as for
                       settle-3.lua: a token of another workspace than the found offer's
                       is none (the offer found may change between tries)
  ARGV[8]              (optional) retention: ms each key of the chat lives after a
                       write (0: forever)

  Result: { status, offer, settlement }, each record { entry id, { field, value, ... } }
    0 WITHDRAWN      the settlement was appended
    1 DUPLICATE      this tool call withdrew already: its offer and settlement records;
                     nothing recorded
    2 NO_OPEN_OFFER  no open offer has that title; nothing recorded
    3 FENCED         { 3, fence, workspace }: the offer belongs to a workspace and the
                     token is missing, of another workspace, or an inbox read passed
                     it; nothing recorded:
                     announce the chat in that workspace above the fence and repeat
]]
--- @include "projection"

local log, proj, changes = KEYS[1], KEYS[2], KEYS[3]
local title, reason, call = ARGV[1], ARGV[2], ARGV[3]

local fold = catchUp(log, proj)

local function entry(entryId)
  if not entryId then
    return nil
  end
  return redis.call('XRANGE', log, entryId, entryId)[1]
end

if call ~= '' then
  local settlement = entry(redis.call('HGET', proj, 'w:' .. call))
  if settlement then
    local id = recordFields(settlement[2])['id']
    local offer = entry(redis.call('HGET', proj, 'e:' .. id))
    if offer then
      return { 1, offer, settlement }
    end
  end
end

-- Newest offer first: the offer order runs from i:1 (oldest) to i:<n>.
for i = fold.n, 1, -1 do
  local id = redis.call('HGET', proj, 'i:' .. i)
  if id and redis.call('HGET', proj, 's:' .. id) == 'open' then
    local offer = entry(redis.call('HGET', proj, 'e:' .. id))
    if offer and recordFields(offer[2])['title'] == title then
      -- A withdrawal changes the workspace's inbox, as any settlement does.
      local ws = recordFields(offer[2])['ws'] or ''
      if ws ~= '' then
        local fence = inboxFence(proj, ws)
        local elsewhere = ARGV[7] and ARGV[7] ~= '' and ARGV[7] ~= ws
        if ARGV[4] == '' or elsewhere or fence >= tonumber(ARGV[4]) then
          return { 3, fence, ws }
        end
      end
      local record = {
        'type', 'settled', 'id', id, 'outcome', 'dismissed', 'by', 'agent',
        'reason', reason, 'call', call, 'time', nowMs(),
      }
      local entryId = appendRecord(log, proj, changes, record, fold)
      renewChat(ARGV[8], log, proj)
      if ws ~= '' and ARGV[5] ~= '' then
        redis.call('SPUBLISH', ARGV[5] .. ws .. ARGV[6], entryId)
      end
      return { 0, offer, { entryId, record } }
    end
  end
end
return { 2 }
