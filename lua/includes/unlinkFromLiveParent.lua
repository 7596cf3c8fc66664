--[[
  A job about to be deleted, with no parent handed in by the caller,
  leaves the dependencies of the parent its own hash names (the
  parentKey field), but only while that parent's hash still exists: a
  parent that is gone is not touched. The unlink itself is the soft one
  of includes/unlinkRemovedChild (the last dependency releases a parent
  waiting for children to the head of wait).
  Call it before the job's hash is deleted. Returns whether the job was
  one of the parent's dependencies.
  Needs: rcall.
]]
--- @include "unlinkRemovedChild"

local function unlinkFromLiveParent(jobKey)
  local parentKey = rcall("HGET", jobKey, "parentKey")
  if not parentKey or parentKey == "" then
    return false
  end
  if rcall("EXISTS", parentKey) ~= 1 then
    return false
  end
  return unlinkRemovedChild(jobKey, parentKey)
end
