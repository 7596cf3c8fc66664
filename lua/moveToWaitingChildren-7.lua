--[[
  An active parent waits for its children (Job.moveToWaitingChildren):
  it leaves active for waiting-children, scored with now, while a child
  is still pending.

  Input:
    KEYS[1] active
    KEYS[2] waiting-children
    KEYS[3] job key (BASE .. jobId)
    KEYS[4] job:dependencies
    KEYS[5] job:unsuccessful
    KEYS[6] stalled
    KEYS[7] events stream

    ARGV[1] lock token; "0" means no lock check
    ARGV[2] a child's job key to wait for, or "" for any pending child
    ARGV[3] now (ms): the score in waiting-children
    ARGV[4] job id
    ARGV[5] BASE ("<prefix>:<queue>:"; unused here)

  Output:
     0  moved to waiting-children
     1  nothing to wait for (the named child, or any child, is not
        pending): the job stays where it is, its lock untouched
    -1  the job hash does not exist
    -2  no lock on the job
    -3  the job is not in active (its lock already released by then)
    -6  the lock belongs to another token
    -9  the job has a failed child (job:unsuccessful is not empty)

  Order: job hash (-1) -> unsuccessful (-9) -> pending check (1) -> lock
  release (-2/-6) -> LREM active -1 (-3) -> ZADD waiting-children now ->
  an untrimmed 'waiting-children jobId <id> prev active' event.
]]
local rcall = redis.call
local activeKey = KEYS[1]
local waitingChildrenKey = KEYS[2]
local jobKey = KEYS[3]
local dependenciesKey = KEYS[4]
local unsuccessfulKey = KEYS[5]
local stalledKey = KEYS[6]
local eventsKey = KEYS[7]

local token = ARGV[1]
local childKey = ARGV[2]
local now = ARGV[3]
local jobId = ARGV[4]

--- @include "includes/removeLock"

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

if rcall("ZCARD", unsuccessfulKey) ~= 0 then
  return -9
end

local pending
if childKey ~= "" then
  pending = rcall("SISMEMBER", dependenciesKey, childKey) == 1
else
  pending = rcall("SCARD", dependenciesKey) ~= 0
end
if not pending then
  return 1
end

local lockError = removeLock(jobKey, stalledKey, token, jobId)
if lockError < 0 then
  return lockError
end

if rcall("LREM", activeKey, -1, jobId) < 1 then
  return -3
end

rcall("ZADD", waitingChildrenKey, tonumber(now), jobId)
rcall("XADD", eventsKey, "*", "event", "waiting-children", "jobId", jobId,
  "prev", "active")
return 0
