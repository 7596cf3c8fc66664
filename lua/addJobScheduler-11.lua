--[[
  Create or replace a job scheduler, and add its next iteration.

  Input:
    KEYS[1]  repeat (zset of scheduler ids, scored by next fire time)
    KEYS[2]  delayed
    KEYS[3]  wait
    KEYS[4]  paused (legacy list, only looked in while the queue is paused)
    KEYS[5]  meta
    KEYS[6]  prioritized
    KEYS[7]  marker
    KEYS[8]  id (job id counter)
    KEYS[9]  events stream
    KEYS[10] pc (priority counter)
    KEYS[11] active

    ARGV[1] next fire time (ms) the client computed (a pattern's; an
            "every" scheduler's is computed here)
    ARGV[2] msgpack scheduler options {name, tz?, pattern?, every?,
            startDate?, endDate?, limit?, offset?}
    ARGV[3] scheduler id
    ARGV[4] template data, JSON text
    ARGV[5] msgpack template job opts
    ARGV[6] msgpack opts of this iteration (repeat.offset is read)
    ARGV[7] now (ms)
    ARGV[8] BASE ("<prefix>:<queue>:")
    ARGV[9] producer job key, or "" (unused)

  Output:
    {jobId, delay}  the iteration added
    -10             a pattern's iteration id belongs to an existing job
    -11             an "every" scheduler found every slot it tried taken

  Order: events cap -> the next fire time ("every": from the previous
  one unless the interval changed) -> the current iteration removed when
  it still waits (delayed, prioritized or in wait; when paused the legacy
  paused list is searched, so a waiting one stays) -> a replaced
  "every" iteration keeps its fire time -> id collision handling ->
  the hash, INCR id, the new iteration.
]]
local rcall = redis.call
local repeatKey = KEYS[1]
local schedulerId = ARGV[3]
local schedulerKey = repeatKey .. ":" .. schedulerId
local now = tonumber(ARGV[7])
local base = ARGV[8]
local schedulerOpts = cmsgpack.unpack(ARGV[2])
local iterationOpts = cmsgpack.unpack(ARGV[6])
local q = {base = base, delayed = KEYS[2], wait = KEYS[3], meta = KEYS[5],
  prioritized = KEYS[6], marker = KEYS[7], events = KEYS[9], pc = KEYS[10],
  active = KEYS[11]}

--- @include "includes/getOrSetMaxEvents"
--- @include "includes/getEveryNextMillis"
--- @include "includes/storeJobScheduler"
--- @include "includes/addSchedulerIteration"
--- @include "includes/releaseDedupKeyOfRemovedJob"
--- @include "includes/removeJobKeys"
--- @include "includes/removeUnparentedJob"

local maxEvents = getOrSetMaxEvents(q.meta)
local prevMillis = tonumber(rcall("ZSCORE", repeatKey, schedulerId))
local every = schedulerOpts["every"]
local repeatOpts = iterationOpts["repeat"]
local offset = schedulerOpts["offset"] or (repeatOpts and repeatOpts["offset"]) or 0
local nextMillis = ARGV[1]
local newOffset = offset
local everyChanged = false

if every then
  local from = prevMillis
  if prevMillis and tonumber(rcall("HGET", schedulerKey, "every")) ~= every then
    from = nil
    everyChanged = true
  end
  nextMillis, newOffset = getEveryNextMillis(from, every, now, offset,
    schedulerOpts["startDate"])
end

-- The iteration to replace goes when it has not started: delayed,
-- prioritized, or in the list the queue's state names.
local function removeWaitingIteration(jobId)
  local removed = false
  if rcall("ZSCORE", q.delayed, jobId) then
    removed = "delayed"
  elseif rcall("ZSCORE", q.prioritized, jobId) then
    removed = "prioritized"
  else
    local list = q.wait
    if rcall("HEXISTS", q.meta, "paused") == 1 then
      list = KEYS[4]
    end
    if rcall("LREM", list, 1, jobId) == 0 then
      return false
    end
  end
  removeUnparentedJob(base, jobId)
  if removed then
    rcall("ZREM", removed == "delayed" and q.delayed or q.prioritized, jobId)
  end
  return true
end

local replaced = false
if prevMillis and rcall("EXISTS", schedulerKey .. ":" .. prevMillis) == 1 then
  replaced = removeWaitingIteration("repeat:" .. schedulerId .. ":" .. prevMillis)
end
if replaced then
  if every and not everyChanged then
    nextMillis = prevMillis
  end
else
  schedulerOpts["offset"] = newOffset
end

local jobId = "repeat:" .. schedulerId .. ":" .. nextMillis
if rcall("EXISTS", base .. jobId) == 1 then
  if not every then
    if not replaced then
      return -10
    end
  else
    local tries = 0
    repeat
      nextMillis = nextMillis + every
      jobId = "repeat:" .. schedulerId .. ":" .. nextMillis
      tries = tries + 1
    until rcall("EXISTS", base .. jobId) == 0 or tries >= 32
    if rcall("EXISTS", base .. jobId) == 1 then
      return -11
    end
  end
end

local delay = nextMillis - now
if delay < 0 then
  delay = 0
end
storeJobScheduler(repeatKey, schedulerKey, schedulerId, nextMillis,
  schedulerOpts, ARGV[4], cmsgpack.unpack(ARGV[5]))
rcall("INCR", KEYS[8])
addSchedulerIteration(q, jobId, schedulerId, schedulerOpts["name"], ARGV[4],
  iterationOpts, now, delay, maxEvents)
return {jobId, delay}
