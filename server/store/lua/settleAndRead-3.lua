--[[
  settle-3.lua, then readSuggestion-2.lua of the same suggestion, as one script: a
  settlement answers the suggestion exactly as its step left it (as a MULTI of the two
  would) in one EVALSHA. Both texts are inlined by the script loader (`@script`), each
  in a function of its own, so there is one settle rule and one read.

  KEYS, ARGV  as settle-3.lua (ARGV[1] is the suggestion's id, as readSuggestion-2.lua's)

  Result: { settle-3.lua's reply, readSuggestion-2.lua's reply }
]]
--- @announced 5

local function settle()
--- @script "settle-3"
end

local function read()
--- @script "readSuggestion-2"
end

local settled = settle()
-- The read has no version to compare with: it always answers the records.
ARGV[2] = ''
return { settled, read() }
