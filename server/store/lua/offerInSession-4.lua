--[[
  offer-3.lua behind the embedded host's session check, in the same script: with the
  embedded host, a chat's session lives in the same Redis and the same slot as its
  suggestions (both carry the `{session_id}` hash tag, keys.ts), so SuggestTask's
  checks 2 and 3 (a session the host knows, not in a scheduled task's folder) and the
  offer are one round trip instead of two. The offer itself is offer-3.lua's text,
  inlined by the script loader (`@script`), so there is one offer rule.

  KEYS[1..3], ARGV  as offer-3.lua
  KEYS[4] session   the embedded host's serialized `Session` (hostKeys(...).session)

  Result: offer-3.lua's, or
    { 100 }  NO SESSION      the host knows no such session
    { 101 }  SCHEDULED TASK  the session runs in a scheduled task's folder
]]

-- The folder (field 3, a varint) of a serialized Session; 0 when it is absent.
local function sessionFolder(bytes)
  local i, n, folder = 1, #bytes, 0
  local function varint()
    local value, scale = 0, 1
    while i <= n do
      local b = string.byte(bytes, i)
      i = i + 1
      value = value + (b % 128) * scale
      if b < 128 then
        return value
      end
      scale = scale * 128
    end
    return value
  end
  while i <= n do
    local tag = varint()
    local field, wire = math.floor(tag / 8), tag % 8
    if wire == 0 then
      local v = varint()
      if field == 3 then
        folder = v
      end
    elseif wire == 2 then
      i = i + varint()
    elseif wire == 1 then
      i = i + 8
    elseif wire == 5 then
      i = i + 4
    else
      return folder
    end
  end
  return folder
end

local session = redis.call('GET', KEYS[4])
if not session then
  return { 100 }
end
if sessionFolder(session) == 2 then
  return { 101 }
end

--- @script "offer-3"
