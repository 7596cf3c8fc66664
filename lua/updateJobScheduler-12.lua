--[[
  A worker's next iteration of a scheduler, as it picks up the current one.

  Input:
    KEYS[1]  repeat
    KEYS[2]  delayed
    KEYS[3]  wait
    KEYS[4]  paused (unused)
    KEYS[5]  meta
    KEYS[6]  prioritized
    KEYS[7]  marker
    KEYS[8]  id (job id counter)
    KEYS[9]  events stream
    KEYS[10] pc (priority counter)
    KEYS[11] the producer job's key, or "" (unused)
    KEYS[12] active

    ARGV[1] next fire time (ms) the client computed (a pattern's; an
            "every" scheduler's is computed here)
    ARGV[2] scheduler id
    ARGV[3] template data (unused: the scheduler's hash has it)
    ARGV[4] msgpack opts of the next iteration (repeat.every and
            repeat.offset are read when the hash lacks them)
    ARGV[5] now (ms)
    ARGV[6] BASE ("<prefix>:<queue>:")
    ARGV[7] the producer's job id

  Output:
    the new iteration's id, or nothing: no such scheduler, the producer is
    not the current iteration, or the next iteration exists already (then
    a 'duplicated' event).

  Writes: ZADD repeat, HINCRBY ic, INCR id, the iteration; an "every"
  scheduler without an offset in its hash gets the computed one.
]]
local rcall = redis.call
local repeatKey = KEYS[1]
local schedulerId = ARGV[2]
local now = tonumber(ARGV[5])
local iterationOpts = cmsgpack.unpack(ARGV[4])
local q = {base = ARGV[6], delayed = KEYS[2], wait = KEYS[3], meta = KEYS[5],
  prioritized = KEYS[6], marker = KEYS[7], events = KEYS[9], pc = KEYS[10],
  active = KEYS[12]}

--- @include "includes/getOrSetMaxEvents"
--- @include "includes/getEveryNextMillis"
--- @include "includes/addSchedulerIteration"

local prevMillis = tonumber(rcall("ZSCORE", repeatKey, schedulerId))
if not prevMillis then
  return nil
end
local schedulerKey = repeatKey .. ":" .. schedulerId
local stored = rcall("HMGET", schedulerKey, "name", "data", "every",
  "startDate", "offset")
local repeatOpts = iterationOpts["repeat"]
local every = tonumber(stored[3])
if not every and repeatOpts and repeatOpts["every"] then
  every = tonumber(repeatOpts["every"])
end
local nextMillis = tonumber(ARGV[1])
if every then
  local offset = stored[5] or (repeatOpts and repeatOpts["offset"]) or 0
  nextMillis = getEveryNextMillis(prevMillis, every, now, offset, stored[4])
end

if ARGV[7] ~= "repeat:" .. schedulerId .. ":" .. prevMillis then
  return nil
end
local maxEvents = getOrSetMaxEvents(q.meta)
local jobId = "repeat:" .. schedulerId .. ":" .. nextMillis
if rcall("EXISTS", schedulerKey .. ":" .. nextMillis) == 1 then
  rcall("XADD", q.events, "MAXLEN", "~", maxEvents, "*", "event", "duplicated",
    "jobId", jobId)
  return nil
end
rcall("ZADD", repeatKey, nextMillis, schedulerId)
rcall("HINCRBY", schedulerKey, "ic", 1)
rcall("INCR", KEYS[8])
local delay = nextMillis - now
if delay < 0 then
  delay = 0
end
addSchedulerIteration(q, jobId, schedulerId, stored[1], stored[2] or "{}",
  iterationOpts, ARGV[5], delay, maxEvents)
return jobId
