--[[
  A child counts as done for its parent: its return value goes into
  parentKey .. ":processed" under the child's full key (verbatim), and
  the parent is released when no dependency is pending any more. The
  caller has already taken the child out of the parent's dependencies
  (or it never was in them: a completed duplicate being adopted).
  A nil value is a Lua error (HSET of nil), as in BullMQ.
  Needs: rcall.
]]
--- @include "releaseWaitingParent"

local function recordProcessedChild(parentQueueKey, parentKey, parentId, childKey, value,
                                    now)
  rcall("HSET", parentKey .. ":processed", childKey, value)
  releaseParentIfNoPendingChildren(parentQueueKey, parentKey, parentId,
    parentKey .. ":dependencies", now)
end
