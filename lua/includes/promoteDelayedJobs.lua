--[[
  The promotion sweep run by workers before every fetch.

  Due means F <= now: the range 0 .. (now+1)*0x1000 - 1 covers the whole
  band of the current millisecond, and a job at F = now+1 stays. At most
  1000 jobs per call, taken in score order and removed with one ZREM.
  Each job goes to wait (LPUSH, lifo ignored) when its priority is 0,
  otherwise to prioritized behind its tier (fresh pc value); then an
  untrimmed 'waiting ... prev delayed' event and delay = 0 in its hash.
  The hash is not checked for existence.
  One base marker per batch, unless paused or maxed. The delay marker "1"
  is left as it is, even if it now points at a promoted job.
  Needs: rcall.
]]
--- @include "addBaseMarkerIfNeeded"
--- @include "getPriorityScore"

local function promoteDelayedJobs(delayedKey, markerKey, waitKey, prioritizedKey,
                                  eventsKey, base, now, priorityCounterKey, pausedOrMaxed)
  local dueUpTo = (tonumber(now) + 1) * 0x1000 - 1
  local due = rcall("ZRANGEBYSCORE", delayedKey, 0, dueUpTo, "LIMIT", 0, 1000)
  if #due == 0 then
    return
  end
  rcall("ZREM", delayedKey, unpack(due))
  for _, jobId in ipairs(due) do
    local jobKey = base .. jobId
    local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
    if priority == 0 then
      rcall("LPUSH", waitKey, jobId)
    else
      rcall("ZADD", prioritizedKey, getPriorityScore(priority, priorityCounterKey), jobId)
    end
    rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", jobId, "prev", "delayed")
    rcall("HSET", jobKey, "delay", 0)
  end
  addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)
end
