--[[
  Release a parent from waiting-children (includes/placeReleasedParent
  says where it goes).

  releaseParentIfWaiting(parentQueueKey, parentKey, parentId, now)
    Only a parent whose hash still exists and that sits in its queue's
    waiting-children is moved; any other is left alone.
  releaseParentIfNoPendingChildren(parentQueueKey, parentKey, parentId,
                                   dependenciesKey, now)
    The same, once the parent's dependencies set (parentKey ..
    ":dependencies") is empty: the last pending child has just gone.
  Needs: rcall.
]]
--- @include "placeReleasedParent"

local function releaseParentIfWaiting(parentQueueKey, parentKey, parentId, now)
  if rcall("EXISTS", parentKey) ~= 1 then
    return
  end
  if rcall("ZREM", parentQueueKey .. ":waiting-children", parentId) == 1 then
    placeReleasedParent(parentQueueKey, parentKey, parentId, now)
  end
end

local function releaseParentIfNoPendingChildren(parentQueueKey, parentKey, parentId,
                                                dependenciesKey, now)
  if rcall("SCARD", dependenciesKey) == 0 then
    releaseParentIfWaiting(parentQueueKey, parentKey, parentId, now)
  end
end
