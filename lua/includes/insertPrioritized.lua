--[[
  Put a job in the prioritized zset with a fresh counter value and wake a
  worker.
  Needs: rcall.
]]
--- @include "addBaseMarkerIfNeeded"
--- @include "getPriorityScore"

local function insertPrioritized(prioritizedKey, priorityCounterKey, markerKey,
                                 priority, jobId, pausedOrMaxed)
  rcall("ZADD", prioritizedKey, getPriorityScore(priority, priorityCounterKey), jobId)
  addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)
end
