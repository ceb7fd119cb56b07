--[[
  What the read scripts share (readLists-2.lua, readSuggestion-2.lua): the log's version
  and one stream entry by its id.
]]

-- `<id of the last stream entry>:<XLEN>` ('0-0:0' for an empty log): equal versions,
-- equal lists. Stream ids only grow and records never change, so the entries at or
-- below the last id can only be deleted: the same last id and the same length mean the
-- same records, whatever was appended or XDELed in between (only a DEL of the whole
-- stream, rebuilt to the same length within the same millisecond, could repeat one).
local function logVersion(log)
  local last = redis.call('XREVRANGE', log, '+', '-', 'COUNT', 1)[1]
  return (last and last[1] or '0-0') .. ':' .. redis.call('XLEN', log)
end

-- One stream entry { id, { field, value, ... } } by its id; {} when absent or gone.
local function entryAt(log, entryId)
  if not entryId then
    return {}
  end
  return redis.call('XRANGE', log, entryId, entryId)[1] or {}
end
