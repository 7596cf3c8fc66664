--[[
  Retry a finished job (Job.retry).

  Input:
    KEYS[1] the job's key
    KEYS[2] events
    KEYS[3] the set it is in: completed or failed
    KEYS[4] wait
    KEYS[5] meta
    KEYS[6] active
    KEYS[7] marker
    KEYS[8] prioritized
    KEYS[9] pc

    ARGV[1] job id
    ARGV[2] "LPUSH", or "RPUSH" for a lifo job
    ARGV[3] the field to drop: returnvalue or failedReason
    ARGV[4] the set's name (the event's prev)
    ARGV[5] "1" to drop atm
    ARGV[6] "1" to drop ats

  The job leaves the set and loses finishedOn, processedOn and ARGV[3];
  it goes to wait, or with a priority to prioritized (a fresh counter),
  with the base marker unless paused or maxed; a child is pending in its
  parent again; a waiting event.

  Output: 1, -1 without the job, -3 when it is not in the set.
]]
local rcall = redis.call
local jobKey, jobId = KEYS[1], ARGV[1]

--- @include "includes/addReadyJob"
--- @include "includes/getOrSetMaxEvents"
--- @include "includes/insertPrioritized"
--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/moveChildBackToParent"

if rcall("EXISTS", jobKey) == 0 then
  return -1
end
if rcall("ZREM", KEYS[3], jobId) == 0 then
  return -3
end

local dropped = {"finishedOn", "processedOn", ARGV[3]}
if ARGV[5] == "1" then dropped[#dropped + 1] = "atm" end
if ARGV[6] == "1" then dropped[#dropped + 1] = "ats" end
rcall("HDEL", jobKey, unpack(dropped))

local pausedOrMaxed = isQueuePausedOrMaxed(KEYS[5], KEYS[6])
local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
if priority == 0 then
  addReadyJob(KEYS[4], KEYS[7], ARGV[2], jobId, pausedOrMaxed)
else
  insertPrioritized(KEYS[8], KEYS[9], KEYS[7], priority, jobId, pausedOrMaxed)
end
moveChildBackToParent(jobKey, ARGV[4])

local maxEvents = getOrSetMaxEvents(KEYS[5])
rcall("XADD", KEYS[2], "MAXLEN", "~", maxEvents, "*", "event", "waiting",
  "jobId", jobId, "prev", ARGV[4])
return 1
