#!lua
--[[
  Settles one offer for the person (the record says `by person`), or says why not: the
  standing check and the append are this one atomic step.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)
  KEYS[3] changes     the session's pub/sub channel

  ARGV[1] id          the offer's id
  ARGV[2] outcome     started | drafted | dismissed | restored
  ARGV[3] chat_id     the new chat, for started; else empty
  ARGV[4] open limit  (3), for restored
  ARGV[5] token       the inbox token of the chat's announcement in the offer's
                      workspace ('': none yet)
  ARGV[6], ARGV[7]    the parts around the workspace id of a workspace's channel;
                      without them (older callers) the inbox is left alone; both
                      '' when the caller tells the workspace (a cluster: another node)
  ARGV[8]             (optional) the workspace the token was announced in, when the
                      caller announced before knowing the offer's (a guess): a token
                      of another workspace is no token
  ARGV[9]             (optional) retention: ms each key of the chat lives after a write
                      (0: forever)
  ARGV[10], ARGV[11] (optional, read for dismissed only) the person's reason (its word:
                      not_wanted, already_done, duplicate, other) and note, each '' for
                      none; the start scripts put arguments of their own here

  A `started` record carries the options of the offer's first `starting` record
  (projection `o:<id>`, written by lua/beginStart-4.lua), copied from the log: the
  options the new chat was created with.

  Result: { status, standing, chat id }, standing being the offer's after the call
    0 RECORDED   the settlement was appended
    1 ALREADY    the offer already stands as asked (same outcome; restored: open);
                 nothing recorded, so a re-sent call is harmless
    2 NOT_FOUND  no offer with that id
    3 NOT_OPEN   the outcome does not fit the offer's standing
    4 OPEN_LIMIT restored, and the open limit is reached
    5 FENCED     { 5, standing, '', fence, workspace }: the offer belongs to a
                 workspace and the token is missing or an inbox read passed it;
                 nothing recorded: announce the chat in that workspace above the
                 fence and repeat
]]
--- @include "projection"

local log, proj, changes = KEYS[1], KEYS[2], KEYS[3]
local id, outcome, chat = ARGV[1], ARGV[2], ARGV[3]

local fold = catchUp(log, proj)

local state = redis.call('HGET', proj, 's:' .. id)
if not state then
  return { 2, '', '' }
end
local function chatOf()
  return redis.call('HGET', proj, 'k:' .. id) or ''
end

if outcome == 'restored' then
  if state == 'open' then
    return { 1, state, '' }
  end
  if state ~= 'dismissed' then
    return { 3, state, chatOf() }
  end
  if fold.open >= tonumber(ARGV[4]) then
    return { 4, state, '' }
  end
else
  if state == outcome then
    return { 1, state, chatOf() }
  end
  if state ~= 'open' then
    return { 3, state, chatOf() }
  end
end

-- An offer of a workspace changes the workspace's inbox: its chat must have been
-- announced there (store/workspace-inbox.ts), with a token no inbox read has fenced.
local ws = ARGV[6] and offerWorkspace(log, proj, id) or ''
if ws ~= '' then
  local fence = inboxFence(proj, ws)
  local elsewhere = ARGV[8] and ARGV[8] ~= '' and ARGV[8] ~= ws
  if ARGV[5] == '' or elsewhere or fence >= tonumber(ARGV[5]) then
    return { 5, state, '', fence, ws }
  end
end

local record = { 'type', 'settled', 'id', id, 'outcome', outcome }
if outcome == 'started' then
  record[#record + 1] = 'chat'
  record[#record + 1] = chat
  local starting = redis.call('HGET', proj, 'o:' .. id)
  local options = starting and redis.call('XRANGE', log, starting, starting)[1]
  if options then
    local f = recordFields(options[2])
    for _, name in ipairs({ 'model', 'perm', 'brief' }) do
      if f[name] then
        record[#record + 1] = name
        record[#record + 1] = f[name]
      end
    end
  end
elseif outcome == 'dismissed' then
  if ARGV[10] and ARGV[10] ~= '' then
    record[#record + 1] = 'why'
    record[#record + 1] = ARGV[10]
  end
  if ARGV[11] and ARGV[11] ~= '' then
    record[#record + 1] = 'note'
    record[#record + 1] = ARGV[11]
  end
end
-- Every settlement of this script is the person's, through the app's RPCs.
record[#record + 1] = 'by'
record[#record + 1] = 'person'
record[#record + 1] = 'time'
record[#record + 1] = nowMs()
local entryId = appendRecord(log, proj, changes, record, fold)
renewChat(ARGV[9], log, proj)
if ws ~= '' and ARGV[6] ~= '' then
  redis.call('SPUBLISH', ARGV[6] .. ws .. ARGV[7], entryId)
end
local after = outcome
if outcome == 'restored' then
  after = 'open'
end
return { 0, after, chat }
