--[[
  Record a job's progress and tell listeners (RESEARCH-WORKER §8).

  Input:
    KEYS[1] job key (BASE .. jobId)
    KEYS[2] events stream
    KEYS[3] meta

    ARGV[1] job id
    ARGV[2] progress, JSON (stored and sent verbatim)

  Output:
     0  stored
    -1  the job hash does not exist (nothing written)

  Writes: meta opts.maxLenEvents default; HSET progress; trimmed
  'progress jobId <id> data <json>' event.
]]
local rcall = redis.call
local jobKey = KEYS[1]
local eventsKey = KEYS[2]
local metaKey = KEYS[3]
local jobId = ARGV[1]
local progress = ARGV[2]

--- @include "includes/getOrSetMaxEvents"

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end
local maxEvents = getOrSetMaxEvents(metaKey)
rcall("HSET", jobKey, "progress", progress)
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*",
  "event", "progress", "jobId", jobId, "data", progress)
return 0
