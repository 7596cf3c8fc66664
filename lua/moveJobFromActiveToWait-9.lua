--[[
  Push an active job back to be fetched again, after the processor hit a
  rate limit (Node's RateLimitError; RESEARCH-WORKER §5.1). The attempt
  is not counted.

  Input:
    KEYS[1] active
    KEYS[2] wait
    KEYS[3] stalled
    KEYS[4] paused       (legacy; passed but never written)
    KEYS[5] meta
    KEYS[6] limiter
    KEYS[7] prioritized
    KEYS[8] marker
    KEYS[9] events stream

    ARGV[1] job id
    ARGV[2] lock token; "0" means no lock check
    ARGV[3] job key (BASE .. jobId)

  Output:
    pttl  the limiter's remaining window when positive, else 0
    -1    the job hash does not exist
    -2    no lock on the job
    -6    the lock belongs to another token
  There is no "not in active" error: then only the lock was released.

  Order: job hash -> lock -> LREM active (one occurrence). Only if the id
  was in active: p/m (read after the LREM); priority 0 -> RPUSH wait (the
  front) and marker "0" unless p/m; priority P > 0 -> ZADD prioritized at
  P*2^32, in front of its tier, with no pc INCR and no marker; meta
  opts.maxLenEvents default; trimmed 'waiting ... prev active' event.
  Always: the limiter's PTTL.
]]
local rcall = redis.call
local activeKey = KEYS[1]
local waitKey = KEYS[2]
local stalledKey = KEYS[3]
local metaKey = KEYS[5]
local limiterKey = KEYS[6]
local prioritizedKey = KEYS[7]
local markerKey = KEYS[8]
local eventsKey = KEYS[9]

local jobId = ARGV[1]
local token = ARGV[2]
local jobKey = ARGV[3]

--- @include "includes/removeLock"
--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/addReadyJob"
--- @include "includes/getPriorityScore"
--- @include "includes/getOrSetMaxEvents"

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

local lockError = removeLock(jobKey, stalledKey, token, jobId)
if lockError < 0 then
  return lockError
end

if rcall("LREM", activeKey, 1, jobId) > 0 then
  local pausedOrMaxed = isQueuePausedOrMaxed(metaKey, activeKey)
  local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
  if priority > 0 then
    rcall("ZADD", prioritizedKey, frontOfTierScore(priority), jobId)
  else
    addReadyJob(waitKey, markerKey, "RPUSH", jobId, pausedOrMaxed)
  end
  rcall("XADD", eventsKey, "MAXLEN", "~", getOrSetMaxEvents(metaKey), "*",
    "event", "waiting", "jobId", jobId, "prev", "active")
end

local remaining = rcall("PTTL", limiterKey)
if remaining > 0 then
  return remaining
end
return 0
