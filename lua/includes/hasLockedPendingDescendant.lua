--[[
  Whether any job below this one in its flow, following pending
  children only (each job's ":dependencies" set, recursively), holds a
  lock ("<child key>:lock" exists). Processed and failed children are
  not looked at. The job's own lock is the caller's check.
  A child key may belong to another queue; the lock sits next to it.
  Needs: rcall.
]]
local function hasLockedPendingDescendant(jobKey)
  local pending = rcall("SMEMBERS", jobKey .. ":dependencies")
  for _, childKey in ipairs(pending) do
    if rcall("EXISTS", childKey .. ":lock") == 1 then
      return true
    end
    if hasLockedPendingDescendant(childKey) then
      return true
    end
  end
  return false
end
