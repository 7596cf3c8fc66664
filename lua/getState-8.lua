--[[
  Name the state of a job (Job.getState, on Redis before 6.0.6): as
  getStateV2-8, with the lists read whole instead of with LPOS.

  Input:
    KEYS[1] completed
    KEYS[2] failed
    KEYS[3] delayed
    KEYS[4] active
    KEYS[5] wait
    KEYS[6] paused (a legacy list)
    KEYS[7] waiting-children
    KEYS[8] prioritized

    ARGV[1] job id

  Output: the first state holding the job, else "unknown".
]]
local rcall = redis.call
local id = ARGV[1]

--- @include "includes/listHolds"

local function inSet(key)
  return rcall("ZSCORE", key, id)
end

if inSet(KEYS[1]) then return "completed" end
if inSet(KEYS[2]) then return "failed" end
if inSet(KEYS[3]) then return "delayed" end
if inSet(KEYS[8]) then return "prioritized" end
if listHolds(KEYS[4], id) then return "active" end
if listHolds(KEYS[5], id) or listHolds(KEYS[6], id) then return "waiting" end
if inSet(KEYS[7]) then return "waiting-children" end
return "unknown"
