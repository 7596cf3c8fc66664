--[[
  A job key "<queue key>:<id>" split at its last colon: returns the queue
  key (without the trailing colon) and the id. An id with a colon in it
  cannot be told apart from a longer queue key; the last colon wins.
]]
local function splitJobKey(jobKey)
  local jobId = string.match(jobKey, ".*:(.*)")
  return string.sub(jobKey, 1, #jobKey - #jobId - 1), jobId
end
