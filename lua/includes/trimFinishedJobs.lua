--[[
  Retention of a finished set (completed or failed), run by moveToFinished
  right after the finishing job was added to it (keepJobs).

  trimFinishedByAge(setKey, base, now, ageSeconds, limit)
    Drops jobs scored at or before now - age*1000 (inclusive; fractional
    ages work). At most `limit` per call, the newest expired first
    (ZREVRANGEBYSCORE cutoff -inf LIMIT 0 limit); older ones wait for a
    later call. age 0 drops the job that has just finished.
  trimFinishedByCount(setKey, base, keep)
    Keeps the `keep` highest-scored jobs (the finishing job included);
    the rest go, with no limit. Ties rank by member bytes, so the
    lexicographically smallest members of a tie go first.

  A dropped job first leaves the dependencies of the parent it names,
  when that parent still exists (the soft unlink of
  includes/unlinkFromLiveParent: a child that failed without a policy
  is still pending, and as the last one it releases the parent to the
  head of wait), then loses its hash and sub-keys (removeJobKeys). Its
  stale lock and its de: key stay, and no 'removed' event is written.
  Needs: rcall.
]]
--- @include "unlinkFromLiveParent"
--- @include "removeJobKeys"
--- @include "callInBatches"

local function dropTrimmedJob(jobKey)
  unlinkFromLiveParent(jobKey)
  removeJobKeys(jobKey)
end

local function trimFinishedByAge(setKey, base, now, ageSeconds, limit)
  local cutoff = tonumber(now) - ageSeconds * 1000
  local expired = rcall("ZREVRANGEBYSCORE", setKey, cutoff, "-inf", "LIMIT", 0, limit)
  for _, jobId in ipairs(expired) do
    dropTrimmedJob(base .. jobId)
  end
  callInBatches("ZREM", setKey, expired)
end

local function trimFinishedByCount(setKey, base, keep)
  local surplus = rcall("ZREVRANGE", setKey, keep, -1)
  for _, jobId in ipairs(surplus) do
    dropTrimmedJob(base .. jobId)
  end
  rcall("ZREMRANGEBYRANK", setKey, 0, -(keep + 1))
end
