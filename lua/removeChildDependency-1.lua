--[[
  Cut a child loose from its parent (Job.removeChildDependency): the
  child leaves the parent's dependencies and forgets its parent.

  Input:
    KEYS[1] BASE ("<prefix>:<queue>:"; unused here)

    ARGV[1] the child's job key
    ARGV[2] the parent's job key (may be in another queue)

  Output:
     0  unlinked: the child left parent:dependencies and its parentKey
        and parent fields are gone
     1  the child was not one of the parent's pending dependencies (a
        completed child, say): nothing changed
    -1  the child's hash does not exist
    -5  the parent's hash does not exist

  The unlink is the soft one (includes/unlinkRemovedChild): when it was
  the last pending dependency and the parent waits for its children,
  the parent goes to the head of its queue's wait list whatever its
  priority or delay, with the base marker unless paused or maxed and a
  'waiting ... prev waiting-children' event.
]]
local rcall = redis.call
local childKey = ARGV[1]
local parentKey = ARGV[2]

--- @include "includes/unlinkRemovedChild"

if rcall("EXISTS", childKey) ~= 1 then
  return -1
end

if rcall("EXISTS", parentKey) ~= 1 then
  return -5
end

if not unlinkRemovedChild(childKey, parentKey) then
  return 1
end

rcall("HDEL", childKey, "parentKey", "parent")
return 0
