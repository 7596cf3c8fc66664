--[[
  Obliterate a paused queue (Queue.obliterate), one batch.

  Input:
    KEYS[1] meta
    KEYS[2] BASE

    ARGV[1] the most jobs (and schedulers) to remove in this call
    ARGV[2] "force" (anything but "") to remove active jobs too

  Output: -1 when the queue is not paused, -2 when jobs are active and
  ARGV[2] is "" (nothing removed either way); else the jobs go in order:
  active (with their locks), delayed, the job schedulers (their hashes and
  repeat entries), completed, wait, paused, prioritized, failed, each job
  by removeJobHard. 1 when ARGV[1] ran out first; 0 once all went, after
  deleting the queue's own keys. waiting-children, the limiter and
  deduplication keys are not touched here.
]]
local rcall = redis.call
local base = KEYS[2]
local left = tonumber(ARGV[1])

--- @include "includes/removeJobsAtHead"

if rcall("HEXISTS", KEYS[1], "paused") ~= 1 then
  return -1
end

local activeKey = base .. "active"
local active = rcall("LRANGE", activeKey, 0, left - 1)
if #active > 0 and ARGV[2] == "" then
  return -2
end
for _, id in ipairs(active) do
  rcall("DEL", base .. id .. ":lock")
end
left = removeListHead(activeKey, base, left)
if left <= 0 then return 1 end

left = removeZsetHead(base .. "delayed", base, left)
if left <= 0 then return 1 end

local repeatKey = base .. "repeat"
local schedulers = rcall("ZRANGE", repeatKey, 0, left - 1)
for _, id in ipairs(schedulers) do
  rcall("DEL", repeatKey .. ":" .. id)
end
callInBatches("ZREM", repeatKey, schedulers)
left = left - #schedulers
if left <= 0 then return 1 end

left = removeZsetHead(base .. "completed", base, left)
if left <= 0 then return 1 end
left = removeListHead(base .. "wait", base, left)
if left <= 0 then return 1 end
left = removeListHead(base .. "paused", base, left)
if left <= 0 then return 1 end
left = removeZsetHead(base .. "prioritized", base, left)
if left <= 0 then return 1 end
left = removeZsetHead(base .. "failed", base, left)
if left <= 0 then return 1 end

rcall("DEL", base .. "events", base .. "delay", base .. "stalled-check", base .. "stalled",
  base .. "id", base .. "pc", base .. "marker", base .. "meta",
  base .. "metrics:completed", base .. "metrics:completed:data",
  base .. "metrics:failed", base .. "metrics:failed:data")
return 0
