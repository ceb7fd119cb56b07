-- The fold: how each record of a session's log changes the projection
-- (includes/projection.lua names its fields). The rules of the suggestion states live
-- here and in settle-3.lua; test/support/model/fold.ts reads them in TypeScript as the
-- tests' oracle.

-- Folds one stream entry into the projection; unknown kinds and records that do not
-- fit change nothing. `fold` is the projection's head as `catchUp` answers it: its
-- counters are kept there and written with the fields they count. `new` (an append whose
-- script checked that no offer of this id, turn or tool call is recorded) spares the
-- checks the fold would make. Answers true when the entry changed the list.
local function applyRecord(proj, entryId, f, fold, new)
  local id = f['id']
  if id == nil or id == '' then
    return false
  end
  if f['type'] == 'offered' then
    if not new and redis.call('HEXISTS', proj, 's:' .. id) == 1 then
      return false
    end
    fold.n = fold.n + 1
    fold.open = fold.open + 1
    local fields = {
      's:' .. id, 'open', 'e:' .. id, entryId, 'i:' .. fold.n, id, 'n', fold.n, 'open', fold.open,
    }
    local nt = f['nt']
    if nt ~= nil and nt ~= '' then
      fields[#fields + 1] = 'u:' .. id
      fields[#fields + 1] = nt
    end
    local turn, call = f['turn'] or '', f['call'] or ''
    if new then
      -- The first offer of its turn and of its tool call: the script checked both.
      if turn ~= '' then
        fields[#fields + 1] = 't:' .. turn
        fields[#fields + 1] = id
      end
      if call ~= '' then
        fields[#fields + 1] = 'c:' .. call
        fields[#fields + 1] = id
      end
    end
    redis.call('HSET', proj, unpack(fields))
    if not new and turn ~= '' then
      redis.call('HSETNX', proj, 't:' .. turn, id)
    end
    if not new and call ~= '' then
      redis.call('HSETNX', proj, 'c:' .. call, id)
    end
    return true
  elseif f['type'] == 'settled' then
    local state = redis.call('HGET', proj, 's:' .. id)
    local outcome = f['outcome']
    if state == 'open' and (outcome == 'started' or outcome == 'drafted' or outcome == 'dismissed') then
      fold.open = fold.open - 1
      local fields = { 's:' .. id, outcome, 'a:' .. id, entryId, 'open', fold.open }
      if outcome == 'started' then
        fields[#fields + 1] = 'k:' .. id
        fields[#fields + 1] = f['chat'] or ''
      end
      if outcome == 'dismissed' and f['by'] == 'agent' then
        fields[#fields + 1] = 'x:' .. id
        fields[#fields + 1] = '1'
      end
      redis.call('HSET', proj, unpack(fields))
      local call = f['call']
      if f['by'] == 'agent' and call ~= nil and call ~= '' then
        redis.call('HSETNX', proj, 'w:' .. call, entryId)
      end
      return true
    elseif state == 'dismissed' and outcome == 'restored' then
      fold.open = fold.open + 1
      redis.call('HSET', proj, 's:' .. id, 'open', 'open', fold.open)
      redis.call('HDEL', proj, 'a:' .. id, 'x:' .. id)
      return true
    end
    redis.call('HSET', proj, 'r:' .. entryId, '1')
  elseif f['type'] == 'starting' then
    -- The first Start's options of an open offer; later ones change nothing.
    if redis.call('HGET', proj, 's:' .. id) == 'open' then
      redis.call('HSETNX', proj, 'o:' .. id, entryId)
    end
  elseif f['type'] == 'abandoned' then
    -- The Start of that `starting` record failed before any chat could exist: its
    -- options bind no later Start (lua/abandonStart-4.lua).
    if f['starting'] ~= nil and redis.call('HGET', proj, 'o:' .. id) == f['starting'] then
      redis.call('HDEL', proj, 'o:' .. id)
    end
  end
  return false
end
