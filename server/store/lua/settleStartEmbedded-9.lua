#!lua
--[[
  StartSuggestion's holder steps on the embedded host, as one script on a single Redis
  (the offering session's keys and the new chat's are in different slots of a cluster,
  where they stay three calls): the embedded host's CreateChat (createChat-2.lua), then
  settleAndRead-3.lua (`started` only if the offer is still open, and its read), then,
  when `started` was recorded now, the brief's PostMessage (postMessage-3.lua), and the
  lock's end as settleStart-5.lua ends it, except that its waiters hear `delivered`
  when the brief is in (they answer the chat without posting it again) and `released`
  otherwise. Start's order (docs/contract.md), in one step: nothing comes between them.

  KEYS[1..5]  as settleStart-5.lua (log, projection, changes, start lock, results channel)
  KEYS[6]     the new chat's record       (createChat-2.lua's KEYS[1])
  KEYS[7]     the new chat's session      (createChat-2.lua's KEYS[2], postMessage-3.lua's KEYS[1])
  KEYS[8]     the new chat's message ids  (postMessage-3.lua's KEYS[2])
  KEYS[9]     the new chat's messages     (postMessage-3.lua's KEYS[3])

  ARGV[1..10] as settleStart-5.lua (ARGV[10]: `<suggestion_id> released`)
  ARGV[11]    the serialized Chat          (createChat-2.lua's ARGV[1])
  ARGV[12]    the serialized Session       (createChat-2.lua's ARGV[2])
  ARGV[13]    the brief's message id       (postMessage-3.lua's ARGV[1])
  ARGV[14]    the serialized ChatMessage   (postMessage-3.lua's ARGV[2])
  ARGV[15]    the message once the brief is in (`<suggestion_id> delivered`)
  ARGV[16]    (optional) retention, settle-3.lua's ARGV[9] (handed to it as
              settleStart-5.lua does), and the new chat's keys' (0: forever)

  Result: { settleStart-5.lua's three, posted }
    posted  postMessage-3.lua's status when `started` was recorded now; -1 when it was
            not (not posted: the caller makes sure of the brief of a chat recorded
            earlier with a call of its own)
]]
--- @announced 5
--- @single-redis
--- @include "host"
--- @include "locks"

createChat(KEYS[6], KEYS[7], ARGV[11], ARGV[12], ARGV[16])

local function settleAndRead()
--- @script "settleAndRead-3"
end

local token = ARGV[9]
ARGV[9] = ARGV[16]
local both = settleAndRead()
ARGV[9] = token
local held = -1
local posted = -1
if both[1][1] ~= 5 then
  if both[1][1] == 0 then
    posted = postMessage(KEYS[7], KEYS[8], KEYS[9], ARGV[13], ARGV[14], ARGV[16])
  end
  local brief = posted == 0 or posted == 1
  held = releaseLock(KEYS[4], KEYS[5], ARGV[9], brief and ARGV[15] or ARGV[10])
end
return { both[1], both[2], held, posted }
