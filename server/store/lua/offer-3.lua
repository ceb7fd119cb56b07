#!lua
--[[
  Records one offer of suggest_task, or says why not: the quota checks (5 to 7 of the
  design) and the append are this one atomic step.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)
  KEYS[3] changes     the session's pub/sub channel

  ARGV[1] id          the new offer's id (made by the service)
  ARGV[2] turn_id
  ARGV[3] tool_call_id (empty: no retry protection)
  ARGV[4] title       trimmed
  ARGV[5] tldr        trimmed
  ARGV[6] brief       trimmed
  ARGV[7] mode        'append', or 'check' (the fields are invalid: check the quotas only)
  ARGV[8] lifetime limit (10)
  ARGV[9] open limit (3)
  ARGV[10] workspace  the chat's workspace as the host gave it (optional; none: '')
  ARGV[11] token      the inbox token its announcement got (store/workspace-inbox.ts)
  ARGV[12] channel    the workspace's shard channel, told after the append ('': the
                      caller tells it, as on a cluster, where it lives on another node)
  ARGV[13] retention  (optional) ms each key of the chat lives after a write (0: forever)
  ARGV[14] normalized title (trimmed, lower-cased, inner white space collapsed: made by
                      the service, compared here as given; '' or absent: not compared)

  Result: { status, id, entry id, fields of the offer record... }
    0 OK          recorded now
    1 DUPLICATE   this tool call (or this id, re-sent after a reconnect) was recorded
                  already: the first record is answered
    2 LIFETIME    the chat already offered the lifetime limit
    3 OPEN        the open limit is reached
    4 TURN        this turn already offered one
    5 CHECKED     mode 'check' and the quotas allow an offer
    6 FENCED      { 6, fence }: an inbox read passed the token; nothing recorded,
                  announce again above the fence and repeat
    7 DUP_OPEN    an open offer of the chat has the normalized title (checked last)
    8 DUP_DISMISSED  an offer the person dismissed has it (one the agent withdrew
                  does not count)
]]
--- @include "projection"

local log, proj, changes = KEYS[1], KEYS[2], KEYS[3]
local id, turn, call = ARGV[1], ARGV[2], ARGV[3]

local fold = catchUp(log, proj)

local function answerExisting(existing)
  local entryId = redis.call('HGET', proj, 'e:' .. existing)
  local entries = redis.call('XRANGE', log, entryId, entryId)
  return { 1, existing, entryId, entries[1][2] }
end

-- An empty log has no offer: none of this tool call, of this id or of this turn.
if call ~= '' and not fold.empty then
  local existing = redis.call('HGET', proj, 'c:' .. call)
  if existing then
    return answerExisting(existing)
  end
end
if not fold.empty and redis.call('HEXISTS', proj, 's:' .. id) == 1 then
  return answerExisting(id)
end

if fold.n >= tonumber(ARGV[8]) then
  return { 2 }
end
if fold.open >= tonumber(ARGV[9]) then
  return { 3 }
end
if not fold.empty and redis.call('HEXISTS', proj, 't:' .. turn) == 1 then
  return { 4 }
end
if ARGV[7] == 'check' then
  return { 5 }
end

-- Last of the checks: the title of an open offer, or of one the person dismissed.
local nt = ARGV[14] or ''
if nt ~= '' and fold.n > 0 then
  -- The ids and standings `catchUp` read with the head when it folded nothing (the
  -- usual case), else read here.
  local ids, states = fold.ids, fold.states
  if not ids then
    local order = {}
    for i = 1, fold.n do
      order[i] = 'i:' .. i
    end
    ids = hmget(proj, order)
    local refs = {}
    for i, other in ipairs(ids) do
      refs[i] = 's:' .. other
    end
    states = hmget(proj, refs)
  end
  local titles = {}
  for i, other in ipairs(ids) do
    titles[i] = 'u:' .. other
  end
  local same = hmget(proj, titles)
  local dismissed = {}
  for i = 1, #ids do
    if same[i] == nt then
      if states[i] == 'open' then
        return { 7 }
      end
      if states[i] == 'dismissed' then
        dismissed[#dismissed + 1] = 'x:' .. ids[i]
      end
    end
  end
  -- Dismissed by the person: not withdrawn by the agent (`x:`).
  if #dismissed > 0 then
    for _, withdrawn in ipairs(hmget(proj, dismissed)) do
      if not withdrawn then
        return { 8 }
      end
    end
  end
end

local ws = ARGV[10] or ''
if ws ~= '' and ARGV[11] then
  local fence = inboxFence(proj, ws)
  if fence >= tonumber(ARGV[11]) then
    return { 6, fence }
  end
end

local record = {
  'type', 'offered', 'id', id, 'turn', turn, 'call', call,
  'title', ARGV[4], 'tldr', ARGV[5], 'brief', ARGV[6], 'time', nowMs(),
}
if nt ~= '' then
  record[#record + 1] = 'nt'
  record[#record + 1] = nt
end
if ws ~= '' then
  record[#record + 1] = 'ws'
  record[#record + 1] = ws
end
-- New: no offer of this id, turn or tool call is recorded (checked above).
local entryId = appendRecord(log, proj, changes, record, fold, true)
renewChat(ARGV[13], log, proj)
if ws ~= '' and ARGV[12] and ARGV[12] ~= '' then
  redis.call('SPUBLISH', ARGV[12], entryId)
end
return { 0, id, entryId, record }
