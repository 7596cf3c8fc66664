--[[
  Retry a failed job at once (no backoff delay): it leaves active and is
  queued again, in wait or, when it has a priority, in prioritized.

  Input:
    KEYS[1]  active
    KEYS[2]  wait
    KEYS[3]  paused      (legacy; unused)
    KEYS[4]  job key (BASE .. jobId)
    KEYS[5]  meta
    KEYS[6]  events stream
    KEYS[7]  delayed
    KEYS[8]  prioritized
    KEYS[9]  pc          (priority counter)
    KEYS[10] marker
    KEYS[11] stalled

    ARGV[1] BASE ("<prefix>:<queue>:")
    ARGV[2] now (ms); only used by the promotion sweep
    ARGV[3] push command for a job without priority: "LPUSH" (FIFO) or
            "RPUSH" (opts.lifo)
    ARGV[4] job id
    ARGV[5] lock token; "0" means no lock check
    ARGV[6] msgpack flat array of job fields to HMSET, or "" / absent

  Output:
     0  queued again
    -1  the job hash does not exist (the sweep has run all the same)
    -2  no lock on the job
    -3  the job is not in active (the lock is already released and the
        fields already written by then)
    -6  the lock belongs to another token

  Order: paused/maxed -> promotion sweep of due delayed jobs -> job hash
  (-1) -> lock (-2/-6) -> field updates -> LREM active -1 (-3) ->
  paused/maxed again (the job has left active) -> priority 0: push to
  wait with ARGV[3], marker "0" unless paused/maxed; priority > 0:
  prioritized with a fresh pc value, same marker rule -> atm += 1 ->
  trimmed 'waiting ... prev active' event. ats, processedOn and
  finishedOn are left alone.
]]
local rcall = redis.call
local activeKey = KEYS[1]
local waitKey = KEYS[2]
local jobKey = KEYS[4]
local metaKey = KEYS[5]
local eventsKey = KEYS[6]
local delayedKey = KEYS[7]
local prioritizedKey = KEYS[8]
local priorityCounterKey = KEYS[9]
local markerKey = KEYS[10]
local stalledKey = KEYS[11]

local base = ARGV[1]
local now = ARGV[2]
local pushCmd = ARGV[3]
local jobId = ARGV[4]
local token = ARGV[5]

--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/promoteDelayedJobs"
--- @include "includes/removeLock"
--- @include "includes/updateJobFields"
--- @include "includes/addReadyJob"
--- @include "includes/insertPrioritized"
--- @include "includes/getOrSetMaxEvents"

promoteDelayedJobs(delayedKey, markerKey, waitKey, prioritizedKey, eventsKey, base, now,
  priorityCounterKey, isQueuePausedOrMaxed(metaKey, activeKey))

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

local lockError = removeLock(jobKey, stalledKey, token, jobId)
if lockError < 0 then
  return lockError
end

updateJobFields(jobKey, ARGV[6])

if rcall("LREM", activeKey, -1, jobId) < 1 then
  return -3
end

local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
local pausedOrMaxed = isQueuePausedOrMaxed(metaKey, activeKey)
if priority == 0 then
  addReadyJob(waitKey, markerKey, pushCmd, jobId, pausedOrMaxed)
else
  insertPrioritized(prioritizedKey, priorityCounterKey, markerKey, priority, jobId,
    pausedOrMaxed)
end

rcall("HINCRBY", jobKey, "atm", 1)
rcall("XADD", eventsKey, "MAXLEN", "~", getOrSetMaxEvents(metaKey), "*",
  "event", "waiting", "jobId", jobId, "prev", "active")
return 0
