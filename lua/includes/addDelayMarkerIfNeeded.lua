--[[
  Delay marker: member "1" in the marker zset, scored with the next
  delayed fire time. It is recomputed from the head on every write, so it
  can move down as well as up. There is deliberately no paused check.
  Needs: rcall.
]]
--- @include "getNextDelayedTimestamp"

local function addDelayMarkerIfNeeded(markerKey, delayedKey)
  local wakeAt = getNextDelayedTimestamp(delayedKey)
  if wakeAt ~= nil then
    rcall("ZADD", markerKey, wakeAt, "1")
  end
end
