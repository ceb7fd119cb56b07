#!lua
--[[
  Extends a start lock, only for its holder (compare-and-PEXPIRE).

  KEYS[1] lock   the start lock of one (session, suggestion)

  ARGV[1] token  the holder's random token
  ARGV[2] ttl    the new lifetime, in ms

  Result:
    1  extended: the caller still holds the lock
    0  not extended: the lock expired or another caller holds it now
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
