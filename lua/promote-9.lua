--[[
  Promote one delayed job now (Job.promote), whatever its fire time.

  Input:
    KEYS[1] delayed
    KEYS[2] wait
    KEYS[3] paused       (legacy; unused)
    KEYS[4] meta
    KEYS[5] prioritized
    KEYS[6] active
    KEYS[7] pc           (priority counter)
    KEYS[8] events stream
    KEYS[9] marker

    ARGV[1] BASE ("<prefix>:<queue>:")
    ARGV[2] job id

  Output:
     0  promoted
    -3  the job is not in the delayed zset

  Writes: ZREM delayed; a legacy "0:" marker at the head of wait is
  dropped; priority 0 -> LPUSH wait, else prioritized with a fresh pc
  value; marker "0" unless paused or maxed; untrimmed 'waiting ... prev
  delayed' event; delay = 0 in the hash. The hash is not checked and the
  delay marker "1" is not refreshed.
]]
local rcall = redis.call
local delayedKey = KEYS[1]
local waitKey = KEYS[2]
local metaKey = KEYS[4]
local prioritizedKey = KEYS[5]
local activeKey = KEYS[6]
local priorityCounterKey = KEYS[7]
local eventsKey = KEYS[8]
local markerKey = KEYS[9]

local base = ARGV[1]
local jobId = ARGV[2]

--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/addReadyJob"
--- @include "includes/insertPrioritized"

if rcall("ZREM", delayedKey, jobId) ~= 1 then
  return -3
end

local jobKey = base .. jobId
local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
local pausedOrMaxed = isQueuePausedOrMaxed(metaKey, activeKey)

-- A BullMQ < 5 wake-up marker is redundant once a real job is queued.
local head = rcall("LINDEX", waitKey, 0)
if head and string.sub(head, 1, 2) == "0:" then
  rcall("LPOP", waitKey)
end

if priority == 0 then
  addReadyJob(waitKey, markerKey, "LPUSH", jobId, pausedOrMaxed)
else
  insertPrioritized(prioritizedKey, priorityCounterKey, markerKey, priority, jobId,
    pausedOrMaxed)
end
rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", jobId, "prev", "delayed")
rcall("HSET", jobKey, "delay", 0)
return 0
