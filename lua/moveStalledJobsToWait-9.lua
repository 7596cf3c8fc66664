--[[
  The stall check run by workers every stalledInterval. An id that was
  marked in the previous pass and is still in active with no lock has
  stalled: it goes back to the front of wait (stc += 1), with a deferred
  failure (defa) once it has stalled more than maxStalledCount times.
  Then every id now in active is marked for the next pass.

  Input:
    KEYS[1] stalled      (set of ids marked in the previous pass)
    KEYS[2] wait
    KEYS[3] active
    KEYS[4] stalled-check (throttle key)
    KEYS[5] meta
    KEYS[6] paused       (legacy; unused)
    KEYS[7] marker
    KEYS[8] events stream
    KEYS[9] repeat       (job scheduler zset; schedulers at KEYS[9]:<id>)

    ARGV[1] maxStalledCount
    ARGV[2] BASE ("<prefix>:<queue>:")
    ARGV[3] now (ms), stored in stalled-check
    ARGV[4] stalledInterval (ms), the stalled-check PX

  Output:
    the ids moved back to wait, in the order they were handled ({} when
    another pass ran within the interval)

  Order: stalled-check exists -> {} with no change; else SET it PX
  interval -> XTRIM events -> SMEMBERS stalled, DEL stalled -> per id:
  skip it if its lock exists or LREM active 1 removes nothing; else
  HINCRBY stc 1, HSET defa when stc > maxStalledCount unless the job
  belongs to a live scheduler (rjk with KEYS[9]:<rjk> existing, or rjk
  scored in KEYS[9]), RPUSH wait, marker "0" unless paused or maxed
  (after the LREM), untrimmed 'waiting ... prev active' and 'stalled'
  events -> SADD stalled every id in active (7000 per call).
  An id in active with no job hash is recovered all the same (its hash
  then holds only stc). Legacy "0:..." ids (BullMQ < 5 markers) found in
  stalled are only removed from active.
]]
local rcall = redis.call
local stalledKey = KEYS[1]
local waitKey = KEYS[2]
local activeKey = KEYS[3]
local stalledCheckKey = KEYS[4]
local metaKey = KEYS[5]
local markerKey = KEYS[7]
local eventsKey = KEYS[8]
local schedulersKey = KEYS[9]

local maxStalledCount = tonumber(ARGV[1])
local base = ARGV[2]
local now = ARGV[3]
local checkInterval = ARGV[4]

--- @include "includes/trimEvents"
--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/addReadyJob"
--- @include "includes/callInBatches"

local function belongsToLiveScheduler(jobKey)
  local schedulerId = rcall("HGET", jobKey, "rjk")
  if not schedulerId then
    return false
  end
  if rcall("EXISTS", schedulersKey .. ":" .. schedulerId) == 1 then
    return true
  end
  -- older schedulers kept only their zset entry
  return rcall("ZSCORE", schedulersKey, schedulerId) and true or false
end

local function hasStalled(jobId)
  if rcall("EXISTS", base .. jobId .. ":lock") == 1 then
    return false
  end
  return rcall("LREM", activeKey, 1, jobId) > 0
end

local function requeueStalledJob(jobId)
  local jobKey = base .. jobId
  local stalls = rcall("HINCRBY", jobKey, "stc", 1)
  if stalls > maxStalledCount and not belongsToLiveScheduler(jobKey) then
    rcall("HSET", jobKey, "defa", "job stalled more than allowable limit")
  end
  addReadyJob(waitKey, markerKey, "RPUSH", jobId, isQueuePausedOrMaxed(metaKey, activeKey))
  rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", jobId, "prev", "active")
  rcall("XADD", eventsKey, "*", "event", "stalled", "jobId", jobId)
end

if rcall("EXISTS", stalledCheckKey) == 1 then
  return {}
end
rcall("SET", stalledCheckKey, now, "PX", checkInterval)

trimEvents(metaKey, eventsKey)

local suspects = rcall("SMEMBERS", stalledKey)
local requeued = {}
if #suspects > 0 then
  rcall("DEL", stalledKey)
  for _, jobId in ipairs(suspects) do
    if string.sub(jobId, 1, 2) == "0:" then
      rcall("LREM", activeKey, 1, jobId)
    elseif hasStalled(jobId) then
      requeueStalledJob(jobId)
      requeued[#requeued + 1] = jobId
    end
  end
end

callInBatches("SADD", stalledKey, rcall("LRANGE", activeKey, 0, -1))
return requeued
