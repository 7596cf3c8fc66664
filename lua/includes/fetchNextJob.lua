--[[
  Take the next ready job and push it onto the active list.
  Plain jobs first: RPOPLPUSH wait -> active, so any job in wait runs
  before every prioritized job. Legacy "0:..." marker ids (BullMQ < 5)
  met on the way are dropped from active and the pop is retried once,
  as BullMQ does (a second marker in a row would be activated as a job).
  Only when wait is empty: ZPOPMIN prioritized, LPUSH onto active. When
  prioritized is empty too, the pc counter is deleted so the next
  prioritized job starts again at 1.
  Returns the job id, or nil.
  Needs: rcall.
]]
local function popPrioritizedToActive(prioritizedKey, activeKey, priorityCounterKey)
  local popped = rcall("ZPOPMIN", prioritizedKey)
  local jobId = popped[1]
  if jobId == nil then
    rcall("DEL", priorityCounterKey)
    return nil
  end
  rcall("LPUSH", activeKey, jobId)
  return jobId
end

local function fetchNextJob(waitKey, activeKey, prioritizedKey, priorityCounterKey)
  local jobId = rcall("RPOPLPUSH", waitKey, activeKey)
  if jobId and string.sub(jobId, 1, 2) == "0:" then
    rcall("LREM", activeKey, 1, jobId)
    jobId = rcall("RPOPLPUSH", waitKey, activeKey)
  end
  if jobId then
    return jobId
  end
  return popPrioritizedToActive(prioritizedKey, activeKey, priorityCounterKey)
end
