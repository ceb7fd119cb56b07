#!lua flags=no-writes
--[[
  Reads one window of a workspace's inbox index, and what the reader must read back
  from the chats' logs to trust it (store/workspace-inbox.ts).

  KEYS[1] offers   the workspace's sorted set of members (all scores 0)
  KEYS[2] chats    the workspace's chats hash
  KEYS[3] pending  the workspace's set of pending chats
  KEYS[4] docs     the workspace's hash of offer records by member

  ARGV[1] after    the member the window starts after ('': from the newest)
  ARGV[2] limit    the most members to answer
  ARGV[3] held     the index version the reader holds a page of ('': none)

  Result: { pending, members, docs, version }
    pending   { session, token, ... } of every pending chat
    members   up to `limit` members after ARGV[1], newest first
    docs      their offers' records, in the same order (false where missing)
    version   the index's version: `seq:puts` of the chats hash, which every
              announcement (announce-2.lua) and every write (inboxPut-4.lua) moves
  or { version } alone when it equals ARGV[3] and no chat is pending: the index is as
  the reader last read it, and so is every chat of it.
]]
local offers, chats, pending, docs = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

-- Tokens of many chats, in chunks that keep unpack within Lua's stack.
local function tokensOf(sessions)
  local result = {}
  for from = 1, #sessions, 1000 do
    local fields = {}
    for i = from, math.min(from + 999, #sessions) do
      fields[#fields + 1] = 't:' .. sessions[i]
    end
    local tokens = redis.call('HMGET', chats, unpack(fields))
    for i = 1, #tokens do
      result[#result + 1] = sessions[from + i - 1]
      result[#result + 1] = tokens[i] or '0'
    end
  end
  return result
end

local counters = redis.call('HMGET', chats, 'seq', 'puts')
local version = (counters[1] or '0') .. ':' .. (counters[2] or '0')
local waiting = redis.call('SMEMBERS', pending)
if ARGV[3] ~= nil and ARGV[3] == version and #waiting == 0 then
  return { version }
end

local max = '+'
if ARGV[1] ~= '' then
  max = '(' .. ARGV[1]
end
local members = redis.call('ZRANGE', offers, max, '-', 'BYLEX', 'REV', 'LIMIT', 0, tonumber(ARGV[2]))
local records = {}
if #members > 0 then
  records = redis.call('HMGET', docs, unpack(members))
end
return { tokensOf(waiting), members, records, version }
