--[[
  A child that is being removed (deleted at once by keepJobs count 0,
  trimmed, removed by removeJob, or unlinked by removeChildDependency)
  leaves its parent's dependencies: the soft unlink. When it was the
  last one and the parent was in waiting-children, the parent goes to
  the head of its queue's wait list (RPUSH) whatever its priority or
  delay, with the base marker unless paused or maxed, and an untrimmed
  'waiting ... prev waiting-children' event. A child that was no longer
  a dependency (a completed child has already left it) changes nothing.
  parentKey is the child's parentKey field (read before its hash went),
  or the key of a parent whose children are being removed.
  Returns whether the child was one of the parent's dependencies.
  Needs: rcall.
]]
--- @include "splitJobKey"
--- @include "addReadyJob"
--- @include "isQueuePausedOrMaxed"

local function unlinkRemovedChild(childKey, parentKey)
  local dependenciesKey = parentKey .. ":dependencies"
  if rcall("SREM", dependenciesKey, childKey) ~= 1 then
    return false
  end
  if rcall("SCARD", dependenciesKey) ~= 0 then
    return true
  end
  local parentQueueKey, parentId = splitJobKey(parentKey)
  local prefix = parentQueueKey .. ":"
  if rcall("ZREM", prefix .. "waiting-children", parentId) ~= 1 then
    return true
  end
  addReadyJob(prefix .. "wait", prefix .. "marker", "RPUSH", parentId,
    isQueuePausedOrMaxed(prefix .. "meta", prefix .. "active"))
  rcall("XADD", prefix .. "events", "*", "event", "waiting", "jobId", parentId,
    "prev", "waiting-children")
  return true
end
