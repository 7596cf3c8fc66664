--[[
  Put a non-prioritized job in the wait list and wake a worker.
  pushCmd is "LPUSH" (FIFO; workers pop the right end) or "RPUSH" (lifo).
  Needs: rcall.
]]
--- @include "addBaseMarkerIfNeeded"

local function addReadyJob(waitKey, markerKey, pushCmd, jobId, pausedOrMaxed)
  rcall(pushCmd, waitKey, jobId)
  addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)
end
