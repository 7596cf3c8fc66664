--[[
  Re-delay a job that is in the delayed zset (Job.changeDelay).
  The new fire time is F = now + delay (delay > 0 only). The score is
  computed before the job leaves the zset, so re-delaying into its own
  band bumps past its own old score.

  Input:
    KEYS[1] delayed
    KEYS[2] meta
    KEYS[3] marker
    KEYS[4] events stream

    ARGV[1] delay (ms, relative)
    ARGV[2] now (ms; may arrive as a string)
    ARGV[3] job id
    ARGV[4] full job key (BASE .. id)

  Output:
     0  re-delayed
    -1  the job hash does not exist
    -3  the job is not in the delayed zset

  Writes: HSET delay; ZADD delayed; meta opts.maxLenEvents default;
  trimmed 'delayed' event whose delay field is F; marker "1" recomputed
  from the head.
]]
local rcall = redis.call
local delayedKey = KEYS[1]
local metaKey = KEYS[2]
local markerKey = KEYS[3]
local eventsKey = KEYS[4]

local delay = tonumber(ARGV[1])
local now = ARGV[2]
local jobId = ARGV[3]
local jobKey = ARGV[4]

--- @include "includes/getDelayedScore"
--- @include "includes/getOrSetMaxEvents"
--- @include "includes/addDelayMarkerIfNeeded"

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

local score, fireAt = getDelayedScore(delayedKey, now, delay)
if rcall("ZREM", delayedKey, jobId) < 1 then
  return -3
end

rcall("HSET", jobKey, "delay", delay)
rcall("ZADD", delayedKey, score, jobId)
rcall("XADD", eventsKey, "MAXLEN", "~", getOrSetMaxEvents(metaKey), "*",
  "event", "delayed", "jobId", jobId, "delay", fireAt)
addDelayMarkerIfNeeded(markerKey, delayedKey)
return 0
