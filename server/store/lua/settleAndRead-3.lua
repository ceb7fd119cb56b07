#!lua
--[[
  settle-3.lua, then readSuggestion-2.lua's read of the same suggestion, as one script: a
  settlement answers the suggestion exactly as its step left it (as a MULTI of the two
  would) in one EVALSHA. settle-3.lua's text is inlined by the script loader (`@script`)
  in a function of its own, so there is one settle rule, and the read is
  includes/reads.lua's `suggestionRecords`, as readSuggestion-2.lua's is; settle-3.lua
  caught the projection up before anything else, so the read does not again.

  KEYS, ARGV  as settle-3.lua (ARGV[1] is the suggestion's id, as readSuggestion-2.lua's)

  Result: { settle-3.lua's reply, readSuggestion-2.lua's reply }
]]
--- @include "projection"
--- @include "reads"

local function settle()
--- @script "settle-3"
end

local settled = settle()
-- Caught up by settle-3.lua, and nothing came between (one script): read as it stands.
local log, proj = KEYS[1], KEYS[2]
return { settled, suggestionRecords(log, proj, ARGV[1], logVersion(logTip(log))) }
