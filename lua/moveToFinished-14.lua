--[[
  Finish an active job: complete it (Job.moveToCompleted) or fail it for
  good (Job.moveToFailed once no retry is left). The job goes to the
  completed or failed zset scored with now, subject to keepJobs
  retention; then, optionally, the worker's next job is fetched.

  Input:
    KEYS[1]  wait
    KEYS[2]  active
    KEYS[3]  prioritized
    KEYS[4]  events stream
    KEYS[5]  stalled
    KEYS[6]  limiter     (rate limit counter; fetch-next only)
    KEYS[7]  delayed
    KEYS[8]  paused      (legacy; unused here)
    KEYS[9]  meta
    KEYS[10] pc          (priority counter)
    KEYS[11] target set: completed or failed
    KEYS[12] job key (BASE .. jobId)
    KEYS[13] metrics hash: metrics:completed or metrics:failed
    KEYS[14] marker

    ARGV[1] job id
    ARGV[2] now (ms): finishedOn and the score in the target set
    ARGV[3] hash field for the outcome: "returnvalue" or "failedReason"
    ARGV[4] the outcome value (stored and sent in the event verbatim)
    ARGV[5] target: "completed" or "failed" (also the event name)
    ARGV[6] fetchNext: "1" fetches the next job; anything else does not
    ARGV[7] BASE ("<prefix>:<queue>:")
    ARGV[8] msgpack map:
            token          lock token; "0" means no lock check
            keepJobs       {count} or {age, count?, limit?}; required
                           (count 0 deletes the job at once; -1 or no
                           count keeps it; age in seconds; limit default
                           1000)
            attempts       the job's opts.attempts; required when failing
            maxMetricsSize data points to keep, or "" for no metrics
            lockDuration, limiter {max, duration}, name: fetch-next only
            (fpof, cpof, idof, rdof, attemptsMade: ignored; a child's
            policy comes from its stored parent record)
    ARGV[9] msgpack flat array of job fields to HMSET, or "" / absent

  Output:
     0  finished, nothing fetched (fetchNext off, or nothing at all to
        fetch)
     {flat HGETALL, jobId, 0, 0}  finished, and the next job is active
     {0, 0, pttl, 0}  finished; fetch-next is rate limited
     {0, 0, 0, 0}     finished; the queue is paused or maxed
     {0, 0, 0, next}  finished; nothing ready, next = delayed head / 0x1000
    -1  the job hash does not exist
    -2  no lock on the job
    -3  the job is not in active (the lock is already released and the
        fields already written by then)
    -4  completing a job that still has pending dependencies
    -6  the lock belongs to another token
    -9  completing a job that has a failed child (unsuccessful)

  Order: job hash (-1) -> completed only: dependencies (-4), unsuccessful
  (-9) -> lock (-2/-6) -> field updates -> keepJobs read (a Lua error when
  it is missing) -> LREM active -1 (-3) -> XTRIM events -> dedup key
  release -> parent bookkeeping -> atm += 1 -> keepJobs count 0: delete
  the job's keys, then unlink it from its parent; otherwise ZADD target,
  HSET outcome + finishedOn, failed: HDEL defa, age trim, count trim ->
  '<target>' event -> failed with atm >= attempts: 'retries-exhausted'
  event -> metrics -> fetch-next -> 'drained' when nothing was returned
  and wait, active and prioritized are all empty.

  Parent bookkeeping (the parent may live in another queue):
  - completed, with a parentKey field: when the job was still in
    parentKey:dependencies it leaves them, its value goes into
    parentKey:processed, and the parent is released from
    waiting-children if nothing is pending any more
    (includes/recordProcessedChild);
  - failed, with a parent record: fpof / cpof / idof / rdof from the
    record (includes/handleFailedChild).
  The parent's queue and id come from the parent record, else from
  parentKey.

  A job dropped by the age or count trim first leaves the dependencies
  of a parent that still exists (includes/trimFinishedJobs).

  Not implemented: the keepLastIfActive requeue from BASE .. "dn:" ..
  deid.
]]
local rcall = redis.call
local waitKey = KEYS[1]
local activeKey = KEYS[2]
local prioritizedKey = KEYS[3]
local eventsKey = KEYS[4]
local stalledKey = KEYS[5]
local limiterKey = KEYS[6]
local delayedKey = KEYS[7]
local metaKey = KEYS[9]
local priorityCounterKey = KEYS[10]
local finishedKey = KEYS[11]
local jobKey = KEYS[12]
local metricsKey = KEYS[13]
local markerKey = KEYS[14]

local jobId = ARGV[1]
local now = ARGV[2]
local outcomeField = ARGV[3]
local outcome = ARGV[4]
local target = ARGV[5]
local base = ARGV[7]
local completing = target == "completed"
local failing = target == "failed"

--- @include "includes/removeLock"
--- @include "includes/updateJobFields"
--- @include "includes/trimEvents"
--- @include "includes/releaseDeduplicationOnFinish"
--- @include "includes/splitJobKey"
--- @include "includes/recordProcessedChild"
--- @include "includes/handleFailedChild"
--- @include "includes/unlinkRemovedChild"
--- @include "includes/removeJobKeys"
--- @include "includes/trimFinishedJobs"
--- @include "includes/recordFinishedMetrics"
--- @include "includes/takeNextJob"
--- @include "includes/isQueuePausedOrMaxed"

-- takeNextJob answers {0, 0, 0, 0} both when the queue is paused or
-- maxed and when there is nothing at all to fetch; only the latter lets
-- moveToFinished go on to the drained check and return 0. Nothing that
-- takeNextJob does without fetching changes meta or active, so the
-- paused-or-maxed rule can be asked again here.
local function fetchedSomethingToReport(fetched)
  if type(fetched[1]) == "table" or fetched[3] ~= 0 then
    return true
  end
  if isQueuePausedOrMaxed(metaKey, activeKey) then
    return true
  end
  return rcall("EXISTS", delayedKey) == 1
end

-- The parent's queue key and id: from the parent record when the job
-- has one (BullMQ prefers it), else split off the parentKey.
local function parentQueueAndId(parentKey, rawRecord)
  if rawRecord then
    local record = cjson.decode(rawRecord)
    return record["queueKey"], record["id"]
  end
  return splitJobKey(parentKey)
end

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

if completing then
  if rcall("SCARD", jobKey .. ":dependencies") ~= 0 then
    return -4
  end
  if rcall("ZCARD", jobKey .. ":unsuccessful") ~= 0 then
    return -9
  end
end

local opts = cmsgpack.unpack(ARGV[8])
local lockError = removeLock(jobKey, stalledKey, opts["token"], jobId)
if lockError < 0 then
  return lockError
end

updateJobFields(jobKey, ARGV[9])

local keepJobs = opts["keepJobs"]
local keepCount = keepJobs["count"]
local keepAgeSeconds = keepJobs["age"]
local ageTrimLimit = keepJobs["limit"] or 1000

if rcall("LREM", activeKey, -1, jobId) < 1 then
  return -3
end

trimEvents(metaKey, eventsKey)
releaseDeduplicationOnFinish(base, rcall("HGET", jobKey, "deid"), jobId)

local parentFields = rcall("HMGET", jobKey, "parentKey", "parent")
local parentKey, parentRecord = parentFields[1], parentFields[2]
if completing then
  if parentKey and rcall("SREM", parentKey .. ":dependencies", jobKey) == 1 then
    local parentQueueKey, parentId = parentQueueAndId(parentKey, parentRecord)
    recordProcessedChild(parentQueueKey, parentKey, parentId, jobKey, outcome, now)
  end
elseif parentRecord then
  handleFailedChild(parentRecord, jobKey, outcome, now)
end

local attemptsMade = rcall("HINCRBY", jobKey, "atm", 1)

if keepCount == 0 then
  removeJobKeys(jobKey)
  if parentKey then
    unlinkRemovedChild(jobKey, parentKey)
  end
else
  rcall("ZADD", finishedKey, now, jobId)
  rcall("HSET", jobKey, outcomeField, outcome, "finishedOn", now)
  if failing then
    rcall("HDEL", jobKey, "defa")
  end
  if keepAgeSeconds ~= nil then
    trimFinishedByAge(finishedKey, base, now, keepAgeSeconds, ageTrimLimit)
  end
  if keepCount ~= nil and keepCount > 0 then
    trimFinishedByCount(finishedKey, base, keepCount)
  end
end

rcall("XADD", eventsKey, "*", "event", target, "jobId", jobId,
  outcomeField, outcome, "prev", "active")

if failing and attemptsMade >= tonumber(opts["attempts"]) then
  rcall("XADD", eventsKey, "*", "event", "retries-exhausted", "jobId", jobId,
    "attemptsMade", attemptsMade)
end

local maxDataPoints = opts["maxMetricsSize"]
if maxDataPoints ~= nil and maxDataPoints ~= "" then
  recordFinishedMetrics(metricsKey, maxDataPoints, now)
end

if ARGV[6] == "1" then
  local fetched = takeNextJob(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey,
    delayedKey, metaKey, priorityCounterKey, markerKey, base, now, opts)
  if fetchedSomethingToReport(fetched) then
    return fetched
  end
end

if rcall("LLEN", waitKey) == 0 and rcall("LLEN", activeKey) == 0
    and rcall("ZCARD", prioritizedKey) == 0 then
  rcall("XADD", eventsKey, "*", "event", "drained")
end
return 0
