--[[
  How many jobs are ready now: the wait list plus the prioritized zset.
  Needs: rcall.
]]
local function getWaitPlusPrioritizedCount(waitKey, prioritizedKey)
  return rcall("LLEN", waitKey) + rcall("ZCARD", prioritizedKey)
end
