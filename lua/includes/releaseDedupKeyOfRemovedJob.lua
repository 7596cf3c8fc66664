--[[
  A job is being removed: if its deduplication window (hash field deid)
  is still owned by it, end the window at once, TTL or not. The window
  key BASE.."de:"..deid is deleted only while it holds this job's id;
  then the pending "next job" hash BASE.."dn:"..deid goes too.
  Needs: rcall.
]]
local function releaseDedupKeyOfRemovedJob(base, jobKey, jobId)
  local dedupId = rcall("HGET", jobKey, "deid")
  if not dedupId then
    return
  end
  local windowKey = base .. "de:" .. dedupId
  if rcall("GET", windowKey) == jobId then
    rcall("DEL", windowKey, base .. "dn:" .. dedupId)
  end
end
