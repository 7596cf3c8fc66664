--[[
  Prioritized score: priority in the high part (times 2^32), the shared
  pc counter taken mod 2^32 in the low part, so each tier is FIFO by
  arrival until the counter wraps.

  frontOfTierScore is the "counter 0" variant: the job goes in front of
  every job of its tier and pc is not touched.
  Needs: rcall.
]]
local function getPriorityScore(priority, priorityCounterKey)
  local arrival = rcall("INCR", priorityCounterKey) % 0x100000000
  return priority * 0x100000000 + arrival
end

local function frontOfTierScore(priority)
  return priority * 0x100000000
end
