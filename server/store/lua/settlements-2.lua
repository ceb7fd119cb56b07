#!lua
--[[
  Reads one session's accepted settlements recorded after a cursor, in log order, in
  O(records after the cursor): the projection is caught up (O(1) when it is current), and
  it marks every `settled` record the fold did not accept (r:<entry id>), so the records
  after the cursor are read and nothing before them is folded. Each settlement comes with
  its offer's record, from which fold.ts builds the suggestion as it stood right after
  it (server/domain/settlements.ts). Pinned against the fold of the whole log by
  test/store/settlements-read.test.ts.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)

  ARGV[1] after       a stream id (checked by the service); empty: from the start

  Result: { offers, settlements }
    offers       the offer records the settlements name, each once:
                 { { entry id, { field, value, ... } }, ... }
    settlements  in log order, { { entry id, { field, value, ... } }, offer index }, the
                 index (1-based) into offers

  It writes only caches (`@cache-only`: its writes wait for no replica): while Redis
  refuses writes (out of memory, a disk that refuses them) it is refused whole before it
  runs, and the service reads the log alone instead (store/log-reads.ts).
]]
--- @cache-only
--- @include "projection"

local log, proj = KEYS[1], KEYS[2]
local after = ARGV[1]

catchUp(log, proj)

local from = '-'
if after ~= '' then
  from = '(' .. after
end
local entries = redis.call('XRANGE', log, from, '+')
local offers, settlements, index = {}, {}, {}
for i = 1, #entries do
  local entryId = entries[i][1]
  local f = recordFields(entries[i][2])
  local id = f['id']
  if f['type'] == 'settled' and id and id ~= '' and redis.call('HEXISTS', proj, 'r:' .. entryId) == 0 then
    local at = index[id]
    if not at then
      local offerId = redis.call('HGET', proj, 'e:' .. id)
      local offer = offerId and redis.call('XRANGE', log, offerId, offerId)[1]
      if offer then
        offers[#offers + 1] = offer
        at = #offers
        index[id] = at
      end
    end
    -- An offer record gone from the stream (XDEL by hand) takes its settlements along.
    if at then
      settlements[#settlements + 1] = { entries[i], at }
    end
  end
end
return { offers, settlements }
