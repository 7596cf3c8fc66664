--[[
  Base marker: member "0" with score 0 in the marker zset.
  It tells workers blocked on BZPOPMIN that a job can be fetched now.
  It is not written while the queue is paused or at its global
  concurrency limit (the caller works that out).
  Needs: rcall.
]]
local function addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)
  if pausedOrMaxed then
    return
  end
  rcall("ZADD", markerKey, 0, "0")
end
