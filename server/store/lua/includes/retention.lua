-- RETENTION_DAYS: a chat's keys expire that long after its last write.

-- Renews the expiry of a chat's keys after a write: `retention` ms (RETENTION_DAYS) from
-- now; '0', '' or none: no expiry is set (one set earlier is left as it is).
local function renewChat(retention, ...)
  local ms = tonumber(retention or '0') or 0
  if ms > 0 then
    for _, key in ipairs({ ... }) do
      redis.call('PEXPIRE', key, ms)
    end
  end
end
