--[[
  Whether a list holds a job id (Queue.isJobInList, on Redis before 6.0.6,
  where the client cannot use LPOS).

  Input:
    KEYS[1] the list
    ARGV[1] job id

  Output: 1, or nil.
]]
local rcall = redis.call

--- @include "includes/listHolds"

return listHolds(KEYS[1], ARGV[1])
