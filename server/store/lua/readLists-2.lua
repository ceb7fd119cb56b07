#!lua
--[[
  Reads one session's lists in O(offers), however long its stream: the projection is
  caught up (O(1) when it is current), then each offer's record and the record of the
  settlement it stands by are read by their stream ids. fold.ts builds the suggestions
  from these records with the same code that folds the whole log, so both readings give
  the same lists (pinned by test/store/list-read.test.ts).

  KEYS[1] log         the session's stream
  KEYS[2] projection  the fold cache (includes/projection.lua)

  ARGV[1] have        (optional) the version the caller already holds the lists of

  Result: { version, offer, settlement, offer, settlement, ... }, or { version } alone
  when it equals `have` (the caller's lists are current: nothing else is read or sent),
  or { version, 'delta', offer, settlement, ... } when the log only grew since `have`
    version     `<id of the last stream entry>:<XLEN>` ('0-0:0' for an empty log): equal
                versions, equal lists (includes/reads.lua says why)
    then two entries per offer, in offer order, each { entry id, { field, value, ... } }:
    offer       the offer's `offered` record
    settlement  the `settled` record the offer stands by; {} while it is open
    'delta'     the log holds every entry it held at `have` and at most 32 more: only
                the offers those entries name (an offer or a settlement of it), in the
                order they are first named. An offer's standing is the fold of its own
                records, so every other offer stands as the caller holds it; new offers
                come after the caller's in offer order (includes/reads.lua `grownBy`).

  It writes only caches (`@cache-only`: its writes wait for no replica): while Redis
  refuses writes (out of memory, a disk that refuses them) it is refused whole before it
  runs, and the service reads the log alone instead (store/log-reads.ts).
]]
--- @cache-only
--- @include "projection"
--- @include "reads"

local log, proj = KEYS[1], KEYS[2]

local tip = logTip(log)
local version = logVersion(tip)
if version == ARGV[1] then
  return { version }
end

catchUp(log, proj, tip)

local named = grownBy(log, ARGV[1] or '', version, 32)
if named then
  local result = { version, 'delta' }
  for _, id in ipairs(named) do
    local refs = redis.call('HMGET', proj, 'e:' .. id, 'a:' .. id)
    result[#result + 1] = entryAt(log, refs[1])
    result[#result + 1] = entryAt(log, refs[2])
  end
  return result
end

local head = redis.call('HMGET', proj, 'n')
local result = { version }
local order = {}
for i = 1, tonumber(head[1] or '0') do
  order[i] = 'i:' .. i
end
local refs = {}
for i, id in ipairs(hmget(proj, order)) do
  refs[2 * i - 1] = 'e:' .. id
  refs[2 * i] = 'a:' .. id
end
refs = hmget(proj, refs)
for i = 1, #refs do
  result[i + 1] = entryAt(log, refs[i])
end
return result
