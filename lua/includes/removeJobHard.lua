--[[
  Remove a job for good, as drain, clean and obliterate do ("hard"): the
  caller takes its id out of its state.

  The job leaves its parent's dependencies. When it was the last pending
  one and the parent was waiting for children, the parent leaves
  waiting-children and: in the same queue, is removed too (from its own
  parent first, then its keys, then the deduplication key named by the
  child's deid, as BullMQ reads it); in another queue, goes to the head of
  that queue's wait (RPUSH) with the base marker unless paused or maxed,
  and no event. Then the job's deduplication window goes if it still names
  the job, and the job's keys.
  Needs: rcall.
]]
--- @include "splitJobKey"
--- @include "addReadyJob"
--- @include "isQueuePausedOrMaxed"
--- @include "removeJobKeys"
--- @include "releaseDedupKeyOfRemovedJob"
--- @include "removeUnparentedJob"

local function leaveParentHard(jobKey, base)
  local fields = rcall("HMGET", jobKey, "parentKey", "deid")
  local parentKey = fields[1]
  if not parentKey or parentKey == "" or rcall("EXISTS", parentKey) ~= 1 then
    return
  end
  local dependenciesKey = parentKey .. ":dependencies"
  if rcall("SREM", dependenciesKey, jobKey) ~= 1 or rcall("SCARD", dependenciesKey) ~= 0 then
    return
  end
  local parentQueueKey, parentId = splitJobKey(parentKey)
  local prefix = parentQueueKey .. ":"
  if rcall("ZREM", prefix .. "waiting-children", parentId) ~= 1 then
    return
  end
  if prefix == base then
    leaveParentHard(parentKey, base)
    removeJobKeys(parentKey)
    if fields[2] then
      rcall("DEL", prefix .. "de:" .. fields[2])
    end
  else
    addReadyJob(prefix .. "wait", prefix .. "marker", "RPUSH", parentId,
      isQueuePausedOrMaxed(prefix .. "meta", prefix .. "active"))
  end
end

local function removeJobHard(jobId, base)
  leaveParentHard(base .. jobId, base)
  removeUnparentedJob(base, jobId)
end
