--[[
  Release a worker's lock on a job before the job leaves active.
  A token of "0" means the caller holds no lock: nothing is checked and
  nothing is deleted. Otherwise the job's ":lock" key must hold exactly
  that token; then the lock is deleted and the id leaves the stalled set.
  Returns 0 when released (or not checked), -6 when the lock belongs to
  another token, -2 when there is no lock at all.
  Needs: rcall.
]]
local function removeLock(jobKey, stalledKey, token, jobId)
  if token == "0" then
    return 0
  end
  local lockKey = jobKey .. ":lock"
  local holder = rcall("GET", lockKey)
  if holder == token then
    rcall("DEL", lockKey)
    rcall("SREM", stalledKey, jobId)
    return 0
  end
  if holder then
    return -6
  end
  return -2
end
