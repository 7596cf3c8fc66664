--[[
  Drain a queue (Queue.drain): remove every job waiting to run.

  Input:
    KEYS[1] wait
    KEYS[2] paused (a legacy list)
    KEYS[3] delayed
    KEYS[4] prioritized
    KEYS[5] repeat (the job schedulers)

    ARGV[1] BASE
    ARGV[2] "1" to remove the delayed jobs too

  Each job scheduler's current iteration (repeat:<id>:<score>) is spared.
  Active, finished and waiting-children jobs stay; no event. Returns
  nothing.
]]
local rcall = redis.call
local base = ARGV[1]

--- @include "includes/removeJobsAtHead"

local spared = {}
local schedulers = rcall("ZRANGE", KEYS[5], 0, -1, "WITHSCORES")
for i = 1, #schedulers, 2 do
  spared["repeat:" .. schedulers[i] .. ":" .. schedulers[i + 1]] = true
end

removeListHead(KEYS[1], base, 0, spared)
removeListHead(KEYS[2], base, 0, spared)
if ARGV[2] == "1" then
  removeZsetHead(KEYS[3], base, 0, spared)
end
removeZsetHead(KEYS[4], base, 0, spared)
