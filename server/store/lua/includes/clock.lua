-- The Redis server's clock.

-- Milliseconds since the epoch by the Redis server's clock, as a string.
local function nowMs()
  local t = redis.call('TIME')
  return tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
