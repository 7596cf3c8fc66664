--[[
  One read of the queue meta hash for workers: returns paused-or-maxed and
  the global rate limit fields max and duration (strings or nil).
  Needs: rcall.
]]
--- @include "isQueuePausedOrMaxed"

local function getQueueMetadata(metaKey, activeKey)
  local fields = rcall("HMGET", metaKey, "paused", "concurrency", "max", "duration")
  return evalPausedOrMaxed(fields[1], fields[2], activeKey), fields[3], fields[4]
end
