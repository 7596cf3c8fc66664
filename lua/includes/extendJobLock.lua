--[[
  Renew a worker's lock on a job. Only the holder may renew: the lock key
  must exist and hold exactly this token. Then it is SET again with the
  token and a fresh PX duration (no NX/XX: a lock that had no TTL gets
  one), and the id leaves the stalled set. A missing lock is never
  re-created.
  Returns true when renewed, false on a mismatch or a missing lock
  (also when token is nil).
  Needs: rcall.
]]
local function extendJobLock(lockKey, stalledKey, token, duration, jobId)
  if token == nil or rcall("GET", lockKey) ~= token then
    return false
  end
  rcall("SET", lockKey, token, "PX", duration)
  rcall("SREM", stalledKey, jobId)
  return true
end
