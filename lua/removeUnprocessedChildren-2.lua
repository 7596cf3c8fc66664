--[[
  Remove a job's pending children (its ":dependencies"), each with the
  pending part of its own tree. The job itself stays; its processed and
  failed children stay too.

  Input:
    KEYS[1] job key (BASE .. jobId)
    KEYS[2] meta          (unused; each removed job's own queue meta is
                           read for the events limit)

    ARGV[1] BASE ("<prefix>:<queue>:"; unused, a child's queue comes from
            its key)
    ARGV[2] job id (unused)

  Output: none (nil).

  Each pending child, in SMEMBERS order (includes/removeJobTree with
  the job as parent, children on, pendingOnly, spareLocked):
  - a child holding a lock is left alone, with its subtree;
  - a child in its queue's failed set (it failed without a policy and is
    still a dependency) is left alone;
  - any other leaves the job's dependencies (the last one releases the
    job from waiting-children to the head of wait with 'waiting'), its
    own pending children go the same way, then it is removed with a
    'removed' event.
]]
local rcall = redis.call
local jobKey = KEYS[1]

--- @include "includes/removeJobTree"

removeChildrenOf(jobKey, {children = true, pendingOnly = true, spareLocked = true})
