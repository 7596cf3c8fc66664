--[[
  Remaining rate-limit window in ms, or 0 when the worker may fetch.
  Limited means the limiter counter has reached maxJobs and the key still
  has a positive PTTL. A key whose PTTL reads 0 is deleted.
  Needs: rcall.
]]
local function getRateLimitTTL(maxJobs, limiterKey)
  if not maxJobs then
    return 0
  end
  local used = tonumber(rcall("GET", limiterKey) or 0)
  if used < maxJobs then
    return 0
  end
  local pttl = rcall("PTTL", limiterKey)
  if pttl == 0 then
    rcall("DEL", limiterKey)
  end
  if pttl > 0 then
    return pttl
  end
  return 0
end
