--[[
  Remove a job that has no children, whatever its state
  (RESEARCH-WORKER §7).

  Input:
    KEYS[1] job key (BASE .. jobId)
    KEYS[2] repeat       (job schedulers zset)

    ARGV[1] job id
    ARGV[2] removeChildren ("1"/"0"); no effect here, see below
    ARGV[3] BASE ("<prefix>:<queue>:")

  Output:
     1  removed, or there was nothing to remove (a nonexistent id too)
     0  the job is locked (BASE..jobId..":lock" exists): nothing changed
    -8  the job is its scheduler's current iteration

  Order: scheduler check -> lock check -> state (first hit of completed,
  waiting-children, delayed, failed, prioritized, wait, paused, active;
  else "unknown") -> dedup window release (de:<deid> and dn:<deid>, only
  while de:<deid> holds this id, even with a TTL) -> DEL of the hash and
  its :logs, :dependencies, :processed, :failed, :unsuccessful keys ->
  only if that DEL removed something: meta opts.maxLenEvents default and
  a trimmed 'removed jobId <id> prev <state>' event.

  Not implemented (parent/child flows): unlinking the job from its
  parent (and releasing a parent whose last child this was), removing
  children (ARGV[2]), and the lock check on children.
]]
local rcall = redis.call
local jobKey = KEYS[1]
local repeatKey = KEYS[2]

local jobId = ARGV[1]
local base = ARGV[3]

--- @include "includes/isCurrentSchedulerJob"
--- @include "includes/removeJobFromAnyState"
--- @include "includes/releaseDedupKeyOfRemovedJob"
--- @include "includes/removeJobKeys"
--- @include "includes/getOrSetMaxEvents"

if isCurrentSchedulerJob(jobKey, repeatKey, jobId) then
  return -8
end

if rcall("EXISTS", jobKey .. ":lock") == 1 then
  return 0
end

local prevState = removeJobFromAnyState(base, jobId)
releaseDedupKeyOfRemovedJob(base, jobKey, jobId)
if removeJobKeys(jobKey) > 0 then
  rcall("XADD", base .. "events", "MAXLEN", "~", getOrSetMaxEvents(base .. "meta"), "*",
    "event", "removed", "jobId", jobId, "prev", prevState)
end
return 1
