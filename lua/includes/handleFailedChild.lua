--[[
  A child failed for good: what its parent record (the job's `parent`
  field, JSON {id, queueKey, fpof?, cpof?, idof?, rdof?}) asks for. The
  record alone decides, never the finishing call's options. Nothing
  happens without a flag, or when the child is no longer one of the
  parent's dependencies (SREM answers 0). One flag acts, fpof before cpof
  before idof/rdof:
  - fpof: the child joins parent:unsuccessful (scored now) and the parent
    is failed through defa (failParentOfChild);
  - cpof: parent:failed records the reason, and the parent is released
    though other children may be pending;
  - idof / rdof: the parent is released if this was its last pending
    child; idof then records the reason in parent:failed.

  failParentOfChild: a parent in waiting-children, or in delayed (its
  delay then set to 0), gets defa "child <childKey> failed" and is
  released, to fail when a worker takes it; a parent elsewhere gets defa
  unless it is in failed already; a parent whose hash is gone is left.
  Needs: rcall.
]]
--- @include "placeReleasedParent"
--- @include "releaseWaitingParent"

local function failParentOfChild(parentQueueKey, parentKey, parentId, childKey, now)
  if rcall("EXISTS", parentKey) ~= 1 then
    return
  end
  local deferredFailure = "child " .. childKey .. " failed"
  local released = rcall("ZREM", parentQueueKey .. ":waiting-children", parentId) == 1
  if not released and rcall("ZSCORE", parentQueueKey .. ":delayed", parentId) then
    rcall("HSET", parentKey, "delay", 0)
    rcall("ZREM", parentQueueKey .. ":delayed", parentId)
    released = true
  end
  if released then
    rcall("HSET", parentKey, "defa", deferredFailure)
    placeReleasedParent(parentQueueKey, parentKey, parentId, now)
  elseif not rcall("ZSCORE", parentQueueKey .. ":failed", parentId) then
    rcall("HSET", parentKey, "defa", deferredFailure)
  end
end

local function handleFailedChild(rawRecord, childKey, reason, now)
  local record = cjson.decode(rawRecord)
  local fpof, cpof = record["fpof"], record["cpof"]
  local idof, rdof = record["idof"], record["rdof"]
  if not (fpof or cpof or idof or rdof) then
    return
  end
  local parentQueueKey, parentId = record["queueKey"], record["id"]
  local parentKey = parentQueueKey .. ":" .. parentId
  local dependenciesKey = parentKey .. ":dependencies"
  if rcall("SREM", dependenciesKey, childKey) ~= 1 then
    return
  end
  if fpof then
    rcall("ZADD", parentKey .. ":unsuccessful", now, childKey)
    failParentOfChild(parentQueueKey, parentKey, parentId, childKey, now)
  elseif cpof then
    rcall("HSET", parentKey .. ":failed", childKey, reason)
    releaseParentIfWaiting(parentQueueKey, parentKey, parentId, now)
  else
    releaseParentIfNoPendingChildren(parentQueueKey, parentKey, parentId, dependenciesKey,
      now)
    if idof then
      rcall("HSET", parentKey .. ":failed", childKey, reason)
    end
  end
end
