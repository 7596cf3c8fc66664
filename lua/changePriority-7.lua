--[[
  Change a job's priority (Job.changePriority). A job that is ready (in
  prioritized or wait) is re-queued under the new priority; a job in any
  other state only gets its priority field updated. No event is written.

  Input:
    KEYS[1] wait
    KEYS[2] paused       (legacy; unused)
    KEYS[3] meta
    KEYS[4] prioritized
    KEYS[5] active
    KEYS[6] pc           (priority counter)
    KEYS[7] marker

    ARGV[1] new priority P
    ARGV[2] BASE ("<prefix>:<queue>:")
    ARGV[3] job id
    ARGV[4] lifo ("1" = true)

  Output:
     0  done
    -1  the job hash does not exist

  Re-queue rules (after ZREM prioritized, or else LREM wait -1):
    P = 0          LPUSH wait (lifo: RPUSH) + marker "0" unless paused/maxed
    P > 0, lifo    score exactly P*2^32 (front of its tier); no INCR, no marker
    P > 0          fresh pc value + marker "0" unless paused/maxed
  Then always HSET priority P.
]]
local rcall = redis.call
local waitKey = KEYS[1]
local metaKey = KEYS[3]
local prioritizedKey = KEYS[4]
local activeKey = KEYS[5]
local priorityCounterKey = KEYS[6]
local markerKey = KEYS[7]

local priority = tonumber(ARGV[1])
local jobId = ARGV[3]
local jobKey = ARGV[2] .. jobId
local lifo = ARGV[4] == "1"

--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/addReadyJob"
--- @include "includes/insertPrioritized"
--- @include "includes/getPriorityScore"

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

local pausedOrMaxed = isQueuePausedOrMaxed(metaKey, activeKey)
local wasReady = rcall("ZREM", prioritizedKey, jobId) > 0
  or rcall("LREM", waitKey, -1, jobId) > 0

if wasReady then
  if priority == 0 then
    local pushCmd = "LPUSH"
    if lifo then
      pushCmd = "RPUSH"
    end
    addReadyJob(waitKey, markerKey, pushCmd, jobId, pausedOrMaxed)
  elseif lifo then
    rcall("ZADD", prioritizedKey, frontOfTierScore(priority), jobId)
  else
    insertPrioritized(prioritizedKey, priorityCounterKey, markerKey, priority, jobId,
      pausedOrMaxed)
  end
end

rcall("HSET", jobKey, "priority", priority)
return 0
