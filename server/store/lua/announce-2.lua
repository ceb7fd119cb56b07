#!lua
--[[
  Announces a chat in a workspace's inbox index before an offer or a restore is
  appended to its log (store/workspace-inbox.ts): the chat is marked pending, so that
  the next read reads it back from its log, and gets a new token, which the append
  checks against the chat's fence.

  KEYS[1] chats    the workspace's chats hash (seq, t:<session>, m:<session>)
  KEYS[2] pending  the workspace's set of pending chats

  ARGV[1] session  the chat
  ARGV[2] minimum  the least token to hand out ('0': any); a fenced writer passes its
                   fence + 1, so tokens stay above fences after the index was deleted

  Result: the token (an integer): includes/announce.lua `announceChat`
]]
--- @include "announce"

return tonumber(announceChat(KEYS[1], KEYS[2], ARGV[1], ARGV[2]))
