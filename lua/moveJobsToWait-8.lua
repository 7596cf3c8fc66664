--[[
  Move finished or delayed jobs to wait in bulk (Queue.retryJobs,
  Queue.promoteJobs).

  Input:
    KEYS[1] BASE
    KEYS[2] events
    KEYS[3] the set: failed, completed or delayed
    KEYS[4] wait
    KEYS[5] paused (unused: 6.x has no paused list)
    KEYS[6] meta
    KEYS[7] active
    KEYS[8] marker

    ARGV[1] the most jobs to move
    ARGV[2] the highest score moved
    ARGV[3] the set's name (the events' prev)

  The jobs scored 0 to ARGV[2], lowest first, are LPUSHed to wait (a
  prioritized one too) with a waiting event each, then the base marker
  unless paused or maxed. A finished job first loses finishedOn,
  processedOn and its returnvalue or failedReason, and a child is pending
  in its parent again.

  Output: 1 when ARGV[1] jobs were moved (there may be more), else 0.
]]
local rcall = redis.call
local most = tonumber(ARGV[1])
local prevState = ARGV[3]

--- @include "includes/addBaseMarkerIfNeeded"
--- @include "includes/callInBatches"
--- @include "includes/getOrSetMaxEvents"
--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/moveChildBackToParent"

local pausedOrMaxed = isQueuePausedOrMaxed(KEYS[6], KEYS[7])
local ids = rcall("ZRANGEBYSCORE", KEYS[3], 0, ARGV[2], "LIMIT", 0, most)
if #ids > 0 then
  local resultField = ({failed = "failedReason", completed = "returnvalue"})[prevState]
  if resultField then
    for _, id in ipairs(ids) do
      local jobKey = KEYS[1] .. id
      rcall("HDEL", jobKey, "finishedOn", "processedOn", resultField)
      moveChildBackToParent(jobKey, prevState)
    end
  end
  local maxEvents = getOrSetMaxEvents(KEYS[6])
  for _, id in ipairs(ids) do
    rcall("XADD", KEYS[2], "MAXLEN", "~", maxEvents, "*", "event", "waiting",
      "jobId", id, "prev", prevState)
  end
  callInBatches("ZREM", KEYS[3], ids)
  callInBatches("LPUSH", KEYS[4], ids)
  addBaseMarkerIfNeeded(KEYS[8], pausedOrMaxed)
end

if most - #ids <= 0 then
  return 1
end
return 0
