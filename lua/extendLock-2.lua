--[[
  Renew one job's lock (RESEARCH-WORKER §3).

  Input:
    KEYS[1] the job's lock key (BASE .. jobId .. ":lock")
    KEYS[2] stalled

    ARGV[1] lock token
    ARGV[2] lock duration (ms)
    ARGV[3] job id

  Output:
    1  the lock held this token: SET again with PX duration, and the id
       left the stalled set
    0  the lock holds another token, or there is no lock (nothing written)
]]
local rcall = redis.call

--- @include "includes/extendJobLock"

if extendJobLock(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]) then
  return 1
end
return 0
