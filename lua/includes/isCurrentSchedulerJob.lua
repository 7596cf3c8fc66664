--[[
  Whether a job is the live iteration of a job scheduler: its hash names
  a scheduler (rjk), the scheduler is still in the repeat zset, and the
  id is exactly "repeat:<rjk>:<score>". Earlier iterations are ordinary
  jobs.
  Needs: rcall.
]]
local function isCurrentSchedulerJob(jobKey, repeatKey, jobId)
  local schedulerId = rcall("HGET", jobKey, "rjk")
  if not schedulerId then
    return false
  end
  local nextMillis = rcall("ZSCORE", repeatKey, schedulerId)
  if not nextMillis then
    return false
  end
  return jobId == "repeat:" .. schedulerId .. ":" .. nextMillis
end
