#!lua
--[[
  DeleteSuggestions' step on the chat's slot (store/chat-erasure.ts): erases, as one
  atomic step, every key of the chat that holds its id or its text: the log, the
  projection, the start locks of its offers and the embedded host's records of the
  session. What comes after it (an offer, a settlement, a Start) finds a chat that never
  offered anything. The inbox entries live on the workspaces' slots: the caller erases
  them next (inboxForget-4.lua), in the workspaces this answers.

  KEYS[1] log          the session's stream
  KEYS[2] projection   the fold cache (includes/projection.lua)
  KEYS[3] changes      the session's pub/sub channel, told when something was erased
  KEYS[4] session      the embedded host's record of the session (keys.ts `hostKeys`)
  KEYS[5] chat         the embedded host's record of the chat, when it created it
  KEYS[6] messages     the embedded host's messages of the chat
  KEYS[7] messageIds   the embedded host's posted message ids of the chat
  KEYS[8..17]          the start locks (keys.ts `startLockKey`) of the offers ARGV[1]
                       names, in its order; the slots left over repeat KEYS[8] (with
                       no offer named, the empty id's lock key, which is never a lock)

  ARGV[1] ids          the offers the lock keys belong to, separated by spaces ('': none)

  Result: { status, workspaces, ids }
    0 ERASED   { 0, { workspace, ... }, { id, ... } }: erased; the workspaces the log's
               offers named, and the offers whose lock keys were not given (a log of
               more offers than lock keys, written around the service): the caller
               deletes those locks itself
    1 LOCKS    { 1, {}, { id, ... } }: the log holds offers whose lock keys were not
               given while keys were left for them; nothing erased: call again with
               the lock keys of these ids
]]
local log = KEYS[1]
local slots = #KEYS - 7

local given = {}
for id in string.gmatch(ARGV[1], '%S+') do
  given[id] = true
end

-- Every offer the log records (an id and a workspace read as the fold reads them),
-- whatever the projection says: the log is the truth.
local workspaces, seenWs, missing, named = {}, {}, {}, 0
local entries = redis.call('XRANGE', log, '-', '+')
for i = 1, #entries do
  local flat = entries[i][2]
  local f = {}
  for j = 1, #flat, 2 do
    f[flat[j]] = flat[j + 1]
  end
  if f['type'] == 'offered' and f['id'] and f['id'] ~= '' then
    named = named + 1
    if not given[f['id']] then
      missing[#missing + 1] = f['id']
      given[f['id']] = true
    end
    local ws = f['ws'] or ''
    if ws ~= '' and not seenWs[ws] then
      seenWs[ws] = true
      workspaces[#workspaces + 1] = ws
    end
  end
end

if #missing > 0 and named <= slots then
  return { 1, {}, missing }
end

local erased = redis.call('DEL', KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], KEYS[7],
  KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15], KEYS[16], KEYS[17])
if erased > 0 then
  redis.call('SPUBLISH', KEYS[3], '0-0')
end
return { 0, workspaces, missing }
