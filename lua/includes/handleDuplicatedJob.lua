--[[
  An add named a custom id whose job hash already exists. The existing job
  keeps its state; only its parent link may change:
  - it has no parent, the same parent, or a parent whose hash is gone,
    and the add names a parent: it is adopted by that parent
    (adoptDuplicatedJob);
  - it belongs to another parent that still exists and the add names a
    parent: return -7, nothing written, except that a flow insert
    (deferRelease) marks the new parent flowAttachmentFailed "1" so that
    the flow's release check (releaseParentIfNoPendingDependencies)
    leaves it waiting;
  - the add names no parent: nothing changes.
  Otherwise a trimmed 'duplicated' event is written and the id returned.

  adoptDuplicatedJob: a job already completed counts as processed at once
  (its returnvalue into parent:processed; a job without returnvalue is a
  Lua error), and the parent is released when nothing else is pending,
  unless deferRelease: the rest of the flow is not in yet, and the flow's
  release check decides. Any other job joins the parent's dependencies.
  The job then gets the parentKey/parent fields of the new link.

  parent is the decoded record {id, queueKey, ...}, parentJson its cjson
  text; timestamp is the add's (a released delayed parent fires at
  timestamp + delay); deferRelease is packed arg [10], set by flow
  inserts.
  Needs: rcall.
]]
--- @include "recordProcessedChild"

local function adoptDuplicatedJob(jobKey, jobId, parentKey, parent, parentJson,
                                  parentDepsKey, completedKey, timestamp, deferRelease)
  if rcall("ZSCORE", completedKey, jobId) then
    local value = rcall("HGET", jobKey, "returnvalue")
    if deferRelease then
      rcall("HSET", parentKey .. ":processed", jobKey, value)
    else
      recordProcessedChild(parent["queueKey"], parentKey, parent["id"], jobKey, value,
        timestamp)
    end
  elseif parentDepsKey ~= nil then
    rcall("SADD", parentDepsKey, jobKey)
  end
  rcall("HMSET", jobKey, "parentKey", parentKey, "parent", parentJson)
end

local function handleDuplicatedJob(jobKey, jobId, parentKey, parent, parentJson,
                                   parentDepsKey, completedKey, eventsKey, maxEvents,
                                   timestamp, deferRelease)
  local linkedParent = rcall("HGET", jobKey, "parentKey")
  if not linkedParent or linkedParent == parentKey
      or rcall("EXISTS", linkedParent) ~= 1 then
    if parentKey ~= nil then
      adoptDuplicatedJob(jobKey, jobId, parentKey, parent, parentJson, parentDepsKey,
        completedKey, timestamp, deferRelease)
    end
  elseif parentKey ~= nil then
    if deferRelease then
      rcall("HSET", parentKey, "flowAttachmentFailed", "1")
    end
    return -7
  end
  rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*",
    "event", "duplicated", "jobId", jobId)
  return tostring(jobId)
end
