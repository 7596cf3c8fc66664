--[[
  The whole worker fetch, shared by moveToActive and the fetch-next step
  of moveToDelayed: meta read -> promotion sweep (up to 1000 jobs with
  F <= now) -> rate limit -> paused/maxed -> wait first, then prioritized
  (pc is deleted when prioritized is empty) -> activate.

  workerOpts is the decoded msgpack map {token, lockDuration,
  limiter = {max, duration} or nil, name?}. Meta max wins over the
  limiter's max; the limiter's duration wins over meta duration.

  Returns the 4-array moveToActive replies with:
    {flat HGETALL of the job, jobId, 0, 0}  a job was activated
    {0, 0, pttl, 0}                         rate limited for pttl ms
    {0, 0, 0, 0}                            paused or maxed, or nothing
                                            ready and nothing delayed
    {0, 0, 0, next}                         nothing ready; next is the
                                            delayed head / 0x1000
  Only the first case has a table as its first element.
  Needs: rcall.
]]
--- @include "getQueueMetadata"
--- @include "promoteDelayedJobs"
--- @include "getRateLimitTTL"
--- @include "fetchNextJob"
--- @include "activateJob"
--- @include "getNextDelayedTimestamp"

local function takeNextJob(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey,
                           delayedKey, metaKey, priorityCounterKey, markerKey,
                           base, now, workerOpts)
  local pausedOrMaxed, metaMax, metaDuration = getQueueMetadata(metaKey, activeKey)

  promoteDelayedJobs(delayedKey, markerKey, waitKey, prioritizedKey, eventsKey, base, now,
    priorityCounterKey, pausedOrMaxed)

  local limiter = workerOpts["limiter"]
  local maxJobs = tonumber(metaMax or (limiter and limiter["max"]))
  local limitedFor = getRateLimitTTL(maxJobs, limiterKey)
  if limitedFor > 0 then
    return {0, 0, limitedFor, 0}
  end

  if pausedOrMaxed then
    return {0, 0, 0, 0}
  end

  local jobId = fetchNextJob(waitKey, activeKey, prioritizedKey, priorityCounterKey)
  if jobId then
    local limiterDuration = (limiter and limiter["duration"]) or metaDuration
    return activateJob(base, limiterKey, eventsKey, markerKey, jobId, now,
      maxJobs, limiterDuration, workerOpts)
  end

  return {0, 0, 0, getNextDelayedTimestamp(delayedKey) or 0}
end
