--[[
  Delete a job's hash and the keys that hang off it: logs, dependencies,
  processed, failed and unsuccessful. The ":lock" key is left alone (it
  expires by itself), as are deduplication keys.
  Returns how many keys were deleted.
  Needs: rcall.
]]
local function removeJobKeys(jobKey)
  return rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end
