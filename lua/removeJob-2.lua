--[[
  Remove a job whatever its state, and with ARGV[2] = "1" its children
  too (RESEARCH-WORKER §7).

  Input:
    KEYS[1] job key (BASE .. jobId)
    KEYS[2] repeat       (job schedulers zset)

    ARGV[1] job id
    ARGV[2] removeChildren: "1" removes the job's children (recursively);
            anything else leaves them
    ARGV[3] BASE ("<prefix>:<queue>:")

  Output:
     1  removed, or there was nothing to remove (a nonexistent id too)
     0  the job is locked (BASE..jobId..":lock" exists), or, with
        removeChildren, a pending descendant is: nothing changed
    -8  the job is its scheduler's current iteration

  Order: scheduler check -> lock check -> with removeChildren, the lock
  check over pending descendants (includes/hasLockedPendingDescendant)
  -> includes/removeJobTree with no parent given:
  - unlink from the parent named by the job's parentKey, when that
    parent exists: the last dependency sends a parent that waits for
    children to the head of wait with 'waiting';
  - with removeChildren, depth first: the processed children, the failed
    ones (:failed, then :unsuccessful), then the pending ones, each
    unlinked from this job first, with their own children;
  - state (first hit of completed, waiting-children, delayed, failed,
    prioritized, wait, paused, active; else "unknown") -> dedup window
    release (de:<deid> and dn:<deid>, only while de:<deid> holds this
    id, even with a TTL) -> DEL of the hash and its :logs,
    :dependencies, :processed, :failed, :unsuccessful keys -> only if
    that DEL removed something: meta opts.maxLenEvents default and a
    trimmed 'removed jobId <id> prev <state>' event.
]]
local rcall = redis.call
local jobKey = KEYS[1]
local repeatKey = KEYS[2]

local jobId = ARGV[1]
local removeChildren = ARGV[2] == "1"
local base = ARGV[3]

--- @include "includes/isCurrentSchedulerJob"
--- @include "includes/hasLockedPendingDescendant"
--- @include "includes/removeJobTree"

if isCurrentSchedulerJob(jobKey, repeatKey, jobId) then
  return -8
end

if rcall("EXISTS", jobKey .. ":lock") == 1 then
  return 0
end

if removeChildren and hasLockedPendingDescendant(jobKey) then
  return 0
end

removeJobTree(base, jobId, nil,
  {children = removeChildren, pendingOnly = false, spareLocked = false})
return 1
