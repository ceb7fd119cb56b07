-- Reading a session's records and its projection hash (includes/projection.lua).

-- A stream entry's flat field list as a table.
local function recordFields(flat)
  local f = {}
  for i = 1, #flat, 2 do
    f[flat[i]] = flat[i + 1]
  end
  return f
end

-- HMGET of many fields, in chunks that keep unpack within Lua's stack.
local function hmget(proj, fields)
  local values = {}
  for from = 1, #fields, 1000 do
    local chunk = redis.call('HMGET', proj, unpack(fields, from, math.min(from + 999, #fields)))
    for i = 1, #chunk do
      values[#values + 1] = chunk[i]
    end
  end
  return values
end
