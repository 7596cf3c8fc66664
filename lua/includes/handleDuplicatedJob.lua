--[[
  An add named a custom id whose job hash already exists. The existing job
  keeps its state; only its parent link may change:
  - it belongs to another parent that still exists: return -7;
  - it has no parent, or the same parent, and the add names a parent: it
    is linked (pending dependency, or processed entry when it is already
    completed) and gets parentKey/parent fields.
  Otherwise a trimmed 'duplicated' event is written and the id returned.

  Simplified on purpose: when a completed duplicate is linked, the parent
  is not released from waiting-children even if that was its last pending
  dependency (BullMQ does release it).
  Needs: rcall.
]]
local function handleDuplicatedJob(jobKey, jobId, parentKey, parentJson,
                                   parentDepsKey, completedKey, eventsKey, maxEvents)
  if parentKey ~= nil then
    local linkedParent = rcall("HGET", jobKey, "parentKey")
    if linkedParent and linkedParent ~= parentKey then
      if rcall("EXISTS", linkedParent) == 1 then
        return -7
      end
    else
      if rcall("ZSCORE", completedKey, jobId) then
        rcall("HSET", parentKey .. ":processed", jobKey,
          rcall("HGET", jobKey, "returnvalue"))
      elseif parentDepsKey ~= nil then
        rcall("SADD", parentDepsKey, jobKey)
      end
      rcall("HMSET", jobKey, "parentKey", parentKey, "parent", parentJson)
    end
  end
  rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*",
    "event", "duplicated", "jobId", jobId)
  return tostring(jobId)
end
