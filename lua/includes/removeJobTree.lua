--[[
  Remove a job and, on request, everything below it in its flow, depth
  first. Used by removeJob (the job and, with children, its whole tree)
  and removeUnprocessedChildren (only the pending part, locked jobs
  spared).

  removeJobTree(prefix, jobId, parentKey, opts)
    prefix is the job's BASE ("<queue key>:"); parentKey is the key of
    the parent whose children are being removed, or nil for the job the
    caller named (its own parentKey field is then followed, only while
    that parent exists: includes/unlinkFromLiveParent). Steps:
    1. opts.spareLocked and the job holds a lock: left alone entirely;
    2. opts.pendingOnly and the job is in its queue's failed set: left
       alone entirely (a failed child without a policy stays pending);
    3. the soft unlink from the parent (includes/unlinkRemovedChild): the
       last dependency releases a parent waiting for children to the
       head of wait, with 'waiting' (a parent being removed too is then
       taken out of wait below, prev "wait");
    4. opts.children: removeChildrenOf(jobKey, opts);
    5. the job leaves its state (includes/removeJobFromAnyState), its
       deduplication window if it still owns it, and its keys; only when
       that DEL removed something, a trimmed 'removed jobId <id> prev
       <state>' event in the job's own queue.
  removeChildrenOf(jobKey, opts)
    Unless opts.pendingOnly: the children recorded in jobKey:processed,
    then jobKey:failed (hash field order), then jobKey:unsuccessful
    (score order); then, always, the pending ones (SMEMBERS order). Each
    goes through removeJobTree with jobKey as its parent. A child key
    may name another queue (split at its last colon).

  Needs: rcall.
]]
--- @include "splitJobKey"
--- @include "unlinkRemovedChild"
--- @include "unlinkFromLiveParent"
--- @include "removeJobFromAnyState"
--- @include "releaseDedupKeyOfRemovedJob"
--- @include "removeJobKeys"
--- @include "getOrSetMaxEvents"

-- The two functions call each other: removeJobTree is declared first so
-- that removeChildrenOf can see it as an upvalue.
local removeJobTree

local function removeEachChild(childKeys, parentKey, opts)
  for _, childKey in ipairs(childKeys) do
    local childQueueKey, childId = splitJobKey(childKey)
    removeJobTree(childQueueKey .. ":", childId, parentKey, opts)
  end
end

local function removeChildrenOf(jobKey, opts)
  if not opts.pendingOnly then
    removeEachChild(rcall("HKEYS", jobKey .. ":processed"), jobKey, opts)
    removeEachChild(rcall("HKEYS", jobKey .. ":failed"), jobKey, opts)
    removeEachChild(rcall("ZRANGE", jobKey .. ":unsuccessful", 0, -1), jobKey, opts)
  end
  removeEachChild(rcall("SMEMBERS", jobKey .. ":dependencies"), jobKey, opts)
end

function removeJobTree(prefix, jobId, parentKey, opts)
  local jobKey = prefix .. jobId
  if opts.spareLocked and rcall("EXISTS", jobKey .. ":lock") == 1 then
    return
  end
  if opts.pendingOnly and rcall("ZSCORE", prefix .. "failed", jobId) then
    return
  end

  if parentKey then
    unlinkRemovedChild(jobKey, parentKey)
  else
    unlinkFromLiveParent(jobKey)
  end

  if opts.children then
    removeChildrenOf(jobKey, opts)
  end

  local prevState = removeJobFromAnyState(prefix, jobId)
  releaseDedupKeyOfRemovedJob(prefix, jobKey, jobId)
  if removeJobKeys(jobKey) > 0 then
    rcall("XADD", prefix .. "events", "MAXLEN", "~", getOrSetMaxEvents(prefix .. "meta"), "*",
      "event", "removed", "jobId", jobId, "prev", prevState)
  end
end
