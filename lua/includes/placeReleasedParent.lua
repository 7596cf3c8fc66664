--[[
  Where a parent goes when it stops waiting for its children, in its own
  queue (parentQueueKey, "<prefix>:<queue>" without the colon):
  - delay > 0: delayed, scored exactly (now + delay) * 0x1000 (no
    same-millisecond band bump, unlike an add), an untrimmed 'delayed'
    event with the fire time, and the delay marker;
  - else priority 0: the head of wait (RPUSH, the next job taken), base
    marker unless paused or maxed;
  - else prioritized with a fresh pc value, base marker unless paused or
    maxed.
  Both ready cases log an untrimmed 'waiting ... prev waiting-children'.
  The caller has already taken the parent out of waiting-children.
  Needs: rcall.
]]
--- @include "addDelayMarkerIfNeeded"
--- @include "addReadyJob"
--- @include "insertPrioritized"
--- @include "isQueuePausedOrMaxed"

local function placeReleasedParent(parentQueueKey, parentKey, parentId, now)
  local prefix = parentQueueKey .. ":"
  local fields = rcall("HMGET", parentKey, "priority", "delay")
  local priority = tonumber(fields[1]) or 0
  local delay = tonumber(fields[2]) or 0

  if delay > 0 then
    local fireAt = tonumber(now) + delay
    rcall("ZADD", prefix .. "delayed", fireAt * 0x1000, parentId)
    rcall("XADD", prefix .. "events", "*", "event", "delayed", "jobId", parentId,
      "delay", fireAt)
    addDelayMarkerIfNeeded(prefix .. "marker", prefix .. "delayed")
    return
  end

  local pausedOrMaxed = isQueuePausedOrMaxed(prefix .. "meta", prefix .. "active")
  if priority == 0 then
    addReadyJob(prefix .. "wait", prefix .. "marker", "RPUSH", parentId, pausedOrMaxed)
  else
    insertPrioritized(prefix .. "prioritized", prefix .. "pc", prefix .. "marker",
      priority, parentId, pausedOrMaxed)
  end
  rcall("XADD", prefix .. "events", "*", "event", "waiting", "jobId", parentId,
    "prev", "waiting-children")
end
