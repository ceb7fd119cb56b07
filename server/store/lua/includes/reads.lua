--[[
  What the read scripts share (readLists-2.lua, readSuggestion-2.lua): the log's version,
  one stream entry by its id, and what a log that only grew since a version holds new.
]]

-- `<id of the last stream entry>:<XLEN>` of the log's tip (projection.lua `logTip`;
-- '0-0:0' for an empty log): equal versions,
-- equal lists. Stream ids only grow and records never change, so the entries at or
-- below the last id can only be deleted: the same last id and the same length mean the
-- same records, whatever was appended or XDELed in between (only a DEL of the whole
-- stream, rebuilt to the same length within the same millisecond, could repeat one).
local function logVersion(tip)
  return (tip.id or '0-0') .. ':' .. tip.length
end

-- One stream entry { id, { field, value, ... } } by its id; {} when absent or gone.
local function entryAt(log, entryId)
  if not entryId then
    return {}
  end
  return redis.call('XRANGE', log, entryId, entryId)[1] or {}
end

-- One suggestion's answer, as readSuggestion-2.lua gives it, from a projection caught up
-- in this script: { version, its offer record, the settlement it stands by } ({} for
-- each that is absent).
local function suggestionRecords(log, proj, id, version)
  local refs = redis.call('HMGET', proj, 'e:' .. id, 'a:' .. id)
  return { version, entryAt(log, refs[1]), entryAt(log, refs[2]) }
end

-- The ids of the offers named by the entries appended since version `have` (an offer
-- record or a settlement of it), in the order first named, when the log still holds
-- every entry it held then and at most `most` more; nil otherwise (no version, entries
-- deleted, or too many new ones). Entries at or below the version's last id can only
-- have been deleted since (stream ids only grow), so the same count below it means the
-- same entries, as for the version itself.
local function grownBy(log, have, version, most)
  local hLast, hLen = string.match(have, '^(.+):(%d+)$')
  local _, nowLen = string.match(version, '^(.+):(%d+)$')
  if not hLast or not nowLen then
    return nil
  end
  local grown = tonumber(nowLen) - tonumber(hLen)
  if grown <= 0 or grown > most then
    return nil
  end
  if hLast ~= '0-0' and #redis.call('XRANGE', log, hLast, hLast) == 0 then
    return nil
  end
  local after = redis.call('XRANGE', log, '(' .. hLast, '+', 'COUNT', grown + 1)
  if #after ~= grown then
    return nil
  end
  local ids, seen = {}, {}
  for i = 1, #after do
    local flat = after[i][2]
    for j = 1, #flat, 2 do
      if flat[j] == 'id' then
        local id = flat[j + 1]
        if id ~= '' and not seen[id] then
          seen[id] = true
          ids[#ids + 1] = id
        end
        break
      end
    end
  end
  return ids
end
