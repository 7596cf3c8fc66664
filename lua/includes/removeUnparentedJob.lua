--[[
  Remove a job that has no parent and no children (a job scheduler's or a
  repeatable job's iteration being replaced): its deduplication key while
  it still owns it, then its hash and the keys that hang off it. The
  caller takes the id out of the state it was in.
  Needs: rcall, releaseDedupKeyOfRemovedJob, removeJobKeys.
]]
local function removeUnparentedJob(base, jobId)
  local jobKey = base .. jobId
  releaseDedupKeyOfRemovedJob(base, jobKey, jobId)
  removeJobKeys(jobKey)
end
