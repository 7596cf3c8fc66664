--[[
  A scheduler's iteration: the job stored with rjk = the scheduler id, its
  opts given delay and jobId, then enqueued as an add would be: delayed
  when delay > 0 (band-bumped score, 'delayed' event, delay marker), else
  prioritized or pushed to wait (LPUSH, RPUSH with lifo), with the base
  marker unless paused or maxed, and a 'waiting' event.
  q holds the keys: base, wait, active, meta, prioritized, pc, delayed,
  marker, events.
  Needs: rcall.
]]
--- @include "storeJob"
--- @include "getDelayedScore"
--- @include "addDelayMarkerIfNeeded"
--- @include "isQueuePausedOrMaxed"
--- @include "insertPrioritized"
--- @include "addReadyJob"

local function addSchedulerIteration(q, jobId, schedulerId, name, data, opts,
                                     timestamp, delay, maxEvents)
  opts["delay"] = delay
  opts["jobId"] = jobId
  local job = {key = q.base .. jobId, id = jobId, repeatJobKey = schedulerId}
  local _, priority = storeJob(q.events, job, name, data, opts, timestamp)
  if delay ~= 0 then
    local score, fireAt = getDelayedScore(q.delayed, timestamp, delay)
    rcall("ZADD", q.delayed, score, jobId)
    rcall("XADD", q.events, "MAXLEN", "~", maxEvents, "*", "event", "delayed",
      "jobId", jobId, "delay", fireAt)
    addDelayMarkerIfNeeded(q.marker, q.delayed)
    return
  end
  local pausedOrMaxed = isQueuePausedOrMaxed(q.meta, q.active)
  if tonumber(priority) > 0 then
    insertPrioritized(q.prioritized, q.pc, q.marker, tonumber(priority), jobId,
      pausedOrMaxed)
  else
    addReadyJob(q.wait, q.marker, opts["lifo"] and "RPUSH" or "LPUSH", jobId,
      pausedOrMaxed)
  end
  rcall("XADD", q.events, "MAXLEN", "~", maxEvents, "*", "event", "waiting",
    "jobId", jobId)
end
