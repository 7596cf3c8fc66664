--[[
  The last call of a flow insert (FlowProducer.add, 6.5.1+), once per
  parent the flow touched: release the parent from waiting-children if
  none of its dependencies is pending. During the insert a completed
  duplicate child only recorded its processed value (packed arg [10] of
  the add scripts), because the parent's later children were not in yet.

  Input:
    KEYS[1] the parent's key (parent queue key .. ":" .. parent id)
    KEYS[2] the parent's dependencies set

    ARGV[1] parent queue key ("<prefix>:<queue>", no trailing colon)
    ARGV[2] parent id
    ARGV[3] timestamp (ms): a released delayed parent fires at
            timestamp + delay

  Output: nothing (nil).

  Order: a parent marked flowAttachmentFailed (a child of the flow was
  refused with -7) loses the mark and stays where it is; otherwise the
  parent is released when its dependencies are empty, it still exists and
  it sits in waiting-children (includes/releaseWaitingParent), else
  nothing happens.
]]
local rcall = redis.call
local parentKey = KEYS[1]
local dependenciesKey = KEYS[2]

--- @include "includes/releaseWaitingParent"

if rcall("HDEL", parentKey, "flowAttachmentFailed") == 1 then
  return
end

releaseParentIfNoPendingChildren(ARGV[1], parentKey, ARGV[2], dependenciesKey, ARGV[3])
