--[[
  Take a job id out of whichever queue structure holds it, looking in a
  fixed order and stopping at the first hit: the zsets completed,
  waiting-children, delayed, failed, prioritized, then the lists wait,
  paused, active (one occurrence each).
  Returns the state it was found in, or "unknown".
  Needs: rcall.
]]
local function removeJobFromAnyState(base, jobId)
  local zsets = {"completed", "waiting-children", "delayed", "failed", "prioritized"}
  for _, state in ipairs(zsets) do
    if rcall("ZREM", base .. state, jobId) == 1 then
      return state
    end
  end
  local lists = {"wait", "paused", "active"}
  for _, state in ipairs(lists) do
    if rcall("LREM", base .. state, 1, jobId) == 1 then
      return state
    end
  end
  return "unknown"
end
