--[[
  Clean old jobs out of one set (Queue.clean).

  Input:
    KEYS[1] the set: wait, paused, active, delayed, prioritized, completed
            or failed
    KEYS[2] events
    KEYS[3] repeat (the job schedulers)

    ARGV[1] BASE
    ARGV[2] the timestamp: jobs not newer are cleaned
    ARGV[3] the most jobs to clean, 0 for all
    ARGV[4] the set's name

  completed and failed are read by score (finishedOn) from 0 to the
  timestamp. The other sets are read whole (a list from its tail when
  limited: LRANGE -limit -1) and a job is old when the first of its age
  fields it has is not greater than the timestamp, compared as text, as
  BullMQ compares them; a job with none is old. Locked active jobs and a
  job scheduler's current iteration stay. Each cleaned job is removed
  (removeJobHard) and leaves its set; one cleaned event gives the count.

  Output: the cleaned ids, in the order they were cleaned.
]]
local rcall = redis.call
local setKey, base = KEYS[1], ARGV[1]
local timestamp = ARGV[2]
local limit = tonumber(ARGV[3])
local setName = ARGV[4]

--- @include "includes/removeJobHard"
--- @include "includes/callInBatches"

local function firstField(jobKey, fields)
  for _, value in ipairs(rcall("HMGET", jobKey, unpack(fields))) do
    if value then
      return value
    end
  end
  return nil
end

local function isOld(jobKey, fields)
  local age = firstField(jobKey, fields)
  return not age or age <= timestamp
end

local function isCurrentIteration(jobId, jobKey)
  local schedulerId = rcall("HGET", jobKey, "rjk")
  if not schedulerId then
    return false
  end
  local millis = rcall("ZSCORE", KEYS[3], schedulerId)
  return millis ~= false and jobId == "repeat:" .. schedulerId .. ":" .. millis
end

local function full(cleaned)
  return limit > 0 and #cleaned >= limit
end

local cleaned = {}
if setName == "wait" or setName == "paused" or setName == "active" then
  local first = limit > 0 and -limit or 0
  local ids = rcall("LRANGE", setKey, first, -1)
  -- Each cleaned entry is overwritten with "" (by its index from the tail),
  -- and every "" is removed at the end.
  for i, id in ipairs(ids) do
    if full(cleaned) then
      break
    end
    local jobKey = base .. id
    if (setName ~= "active" or rcall("EXISTS", jobKey .. ":lock") == 0)
        and not isCurrentIteration(id, jobKey)
        and isOld(jobKey, {"finishedOn", "processedOn", "timestamp"}) then
      rcall("LSET", setKey, i - #ids - 1, "")
      removeJobHard(id, base)
      cleaned[#cleaned + 1] = id
    end
  end
  rcall("LREM", setKey, 0, "")
else
  local finished = setName ~= "delayed" and setName ~= "prioritized"
  local ids
  local upTo = finished and timestamp or "+inf"
  if limit > 0 then
    ids = rcall("ZRANGEBYSCORE", setKey, 0, upTo, "LIMIT", 0, limit)
  else
    ids = rcall("ZRANGEBYSCORE", setKey, 0, upTo)
  end
  local fields = setName == "delayed" and {"processedOn", "timestamp"} or {"timestamp"}
  for _, id in ipairs(ids) do
    if full(cleaned) then
      break
    end
    local jobKey = base .. id
    if finished or (not isCurrentIteration(id, jobKey) and isOld(jobKey, fields)) then
      removeJobHard(id, base)
      cleaned[#cleaned + 1] = id
    end
  end
  callInBatches("ZREM", setKey, cleaned)
end

rcall("XADD", KEYS[2], "*", "event", "cleaned", "count", #cleaned)
return cleaned
