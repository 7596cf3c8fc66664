--[[
  A finished child deleted at once (keepJobs count 0) leaves its parent's
  dependencies. When it was the last one and the parent was in
  waiting-children, the parent goes to the head of its queue's wait list
  (RPUSH) whatever its priority or delay, with the base marker unless
  paused or maxed, and an untrimmed 'waiting ... prev waiting-children'
  event. A child that was no longer a dependency (a completed child has
  already left it) changes nothing.
  parentKey is the child's parentKey field, read before its hash went.
  Needs: rcall.
]]
--- @include "splitJobKey"
--- @include "addReadyJob"
--- @include "isQueuePausedOrMaxed"

local function unlinkRemovedChild(childKey, parentKey)
  local dependenciesKey = parentKey .. ":dependencies"
  if rcall("SREM", dependenciesKey, childKey) ~= 1 then
    return
  end
  if rcall("SCARD", dependenciesKey) ~= 0 then
    return
  end
  local parentQueueKey, parentId = splitJobKey(parentKey)
  local prefix = parentQueueKey .. ":"
  if rcall("ZREM", prefix .. "waiting-children", parentId) ~= 1 then
    return
  end
  addReadyJob(prefix .. "wait", prefix .. "marker", "RPUSH", parentId,
    isQueuePausedOrMaxed(prefix .. "meta", prefix .. "active"))
  rcall("XADD", prefix .. "events", "*", "event", "waiting", "jobId", parentId,
    "prev", "waiting-children")
end
