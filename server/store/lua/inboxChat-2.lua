#!lua
--[[
  Reads a chat's open offers of one workspace back from its log, for the workspace's
  inbox (store/workspace-inbox.ts), and optionally fences the workspace's token: an
  offer or restore announced with a token at or below the fence and not yet appended
  is then refused, so a read that clears the chat's pending mark misses no write.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua), which holds the fence

  ARGV[1] workspace   the workspace; '*': the open offers of every workspace
  ARGV[2] fence       the token to fence ('': none)

  Result: { logged, position, offer, position, offer, ... }:
    logged    1 when the log holds a record, 0 when it is empty (then the fence is not
              taken: a projection deleted by hand would lose it, and with it the only
              trace of the read; the reader keeps such a chat pending instead)
    then, for each open offer of the workspace, in offer order:
    position  the offer's place in the chat's offer order (1, 2, ...)
    offer     its `offered` record { entry id, { field, value, ... } }

  It writes only caches (`@cache-only`: its writes wait for no replica): while Redis
  refuses writes (out of memory, a disk that refuses them) it is refused whole before it
  runs, and the service reads the log alone instead (store/log-reads.ts).
]]
--- @cache-only
--- @include "projection"

local log, proj = KEYS[1], KEYS[2]
local ws, fence = ARGV[1], ARGV[2]

catchUp(log, proj)

local logged = redis.call('EXISTS', log)
if logged == 1 and fence ~= '' and ws ~= '*' and inboxFence(proj, ws) < tonumber(fence) then
  if redis.call('HSET', proj, 'f:' .. ws, fence) == 1 then
    -- A new field: the projection's own field count follows it (includes/projection.lua).
    redis.call('HINCRBY', proj, 'h', 1)
  end
end

local result = { logged }
local n = tonumber(redis.call('HGET', proj, 'open') or '0') > 0
  and tonumber(redis.call('HGET', proj, 'n') or '0')
  or 0
for from = 1, n, 500 do
  local fields = {}
  for i = from, math.min(from + 499, n) do
    fields[#fields + 1] = 'i:' .. i
  end
  local ids = redis.call('HMGET', proj, unpack(fields))
  local states = {}
  for i = 1, #ids do
    states[i] = 's:' .. ids[i]
  end
  states = redis.call('HMGET', proj, unpack(states))
  for i = 1, #ids do
    if states[i] == 'open' then
      local entryId = redis.call('HGET', proj, 'e:' .. ids[i])
      local entry = redis.call('XRANGE', log, entryId, entryId)[1]
      if entry and (ws == '*' or recordFields(entry[2])['ws'] == ws) then
        result[#result + 1] = from + i - 1
        result[#result + 1] = entry
      end
    end
  end
end
return result
