#!lua
--[[
  Reads one suggestion's records, not the chat's: GetSuggestion's read. The version is
  the one readLists-2.lua answers, so an unchanged chat moves no records at all.

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)

  ARGV[1] id          the suggestion's id
  ARGV[2] have        (optional) the version the caller already holds this answer for

  Result: { version } alone when it equals `have`; else { version, offer, settlement }
    version     as readLists-2.lua's
    offer       the offer's `offered` record, {} when the log holds no such offer
    settlement  the `settled` record it stands by; {} while it is open

  It writes only caches (`@cache-only`: its writes wait for no replica): while Redis
  refuses writes (out of memory, a disk that refuses them) it is refused whole before it
  runs, and the service reads the log alone instead (store/log-reads.ts).
]]
--- @cache-only
--- @include "projection"
--- @include "reads"

local log, proj, id = KEYS[1], KEYS[2], ARGV[1]

local tip = logTip(log)
local version = logVersion(tip)
if version == ARGV[2] then
  return { version }
end

catchUp(log, proj, tip)
return suggestionRecords(log, proj, id, version)
