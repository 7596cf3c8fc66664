--[[
  Remove a job scheduler, and its current iteration while it is delayed.

  Input:
    KEYS[1] repeat
    KEYS[2] delayed
    KEYS[3] events stream

    ARGV[1] scheduler id
    ARGV[2] BASE ("<prefix>:<queue>:")

  Output:
    0 the scheduler existed and is gone
    1 there was no such scheduler

  A delayed iteration goes with its keys and a 'removed' event (prev
  delayed, untrimmed); one already waiting or active stays.
]]
local rcall = redis.call
local schedulerId = ARGV[1]

--- @include "includes/removeJobKeys"
--- @include "includes/removeDelayedIteration"

removeDelayedIteration(KEYS[1], KEYS[2], KEYS[3], ARGV[2],
  "repeat:" .. schedulerId .. ":", schedulerId)
if rcall("ZREM", KEYS[1], schedulerId) == 0 then
  return 1
end
rcall("DEL", KEYS[1] .. ":" .. schedulerId)
return 0
