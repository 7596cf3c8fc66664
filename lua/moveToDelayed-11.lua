--[[
  Move an active job to the delayed zset: a retry with backoff (the
  attempt is counted) or Job.moveToDelayed(ts) (usually skipAttempt).
  The fire time is F = now + delay (delay > 0 only), in the band of F
  with the same-millisecond bump.

  Input:
    KEYS[1]  marker
    KEYS[2]  active
    KEYS[3]  prioritized
    KEYS[4]  delayed
    KEYS[5]  job key (BASE .. jobId)
    KEYS[6]  events stream
    KEYS[7]  meta
    KEYS[8]  stalled
    KEYS[9]  wait
    KEYS[10] limiter
    KEYS[11] pc          (priority counter)

    ARGV[1] BASE ("<prefix>:<queue>:")
    ARGV[2] now (ms)
    ARGV[3] job id
    ARGV[4] lock token; "0" means no lock check
    ARGV[5] delay (ms, relative); stored verbatim in the delay field
    ARGV[6] skipAttempt: "0" counts the attempt (atm += 1); any other
            value, "1" included, leaves atm alone
    ARGV[7] msgpack flat array of job fields to HMSET, or ""
    ARGV[8] fetchNext: "1" to fetch the next job after moving this one
    ARGV[9] msgpack worker opts {token, lockDuration, limiter}, as for
            moveToActive; only read when fetchNext is "1"

  Output:
     0  moved (and nothing fetched)
     {flat HGETALL, jobId, 0, 0}  moved, and the next job was activated
    -1  the job hash does not exist
    -2  no lock on the job
    -3  the job is not in active (the lock is already released and the
        fields already updated by then)
    -6  the lock belongs to another token

  Order: job hash -> lock -> field updates -> LREM active -> score ->
  atm -> HSET delay -> meta opts.maxLenEvents default -> ZADD delayed ->
  trimmed 'delayed' event (delay field = F) -> optional fetch-next (the
  sweep may promote this very job when F <= now) -> marker "1" refreshed
  from the head, unless a job was returned.
]]
local rcall = redis.call
local markerKey = KEYS[1]
local activeKey = KEYS[2]
local prioritizedKey = KEYS[3]
local delayedKey = KEYS[4]
local jobKey = KEYS[5]
local eventsKey = KEYS[6]
local metaKey = KEYS[7]
local stalledKey = KEYS[8]
local waitKey = KEYS[9]
local limiterKey = KEYS[10]
local priorityCounterKey = KEYS[11]

local base = ARGV[1]
local now = ARGV[2]
local jobId = ARGV[3]
local token = ARGV[4]
local delay = ARGV[5]

--- @include "includes/removeLock"
--- @include "includes/updateJobFields"
--- @include "includes/getDelayedScore"
--- @include "includes/getOrSetMaxEvents"
--- @include "includes/takeNextJob"
--- @include "includes/addDelayMarkerIfNeeded"

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end

local lockError = removeLock(jobKey, stalledKey, token, jobId)
if lockError < 0 then
  return lockError
end

updateJobFields(jobKey, ARGV[7])

if rcall("LREM", activeKey, -1, jobId) < 1 then
  return -3
end

local score, fireAt = getDelayedScore(delayedKey, now, tonumber(delay))
if ARGV[6] == "0" then
  rcall("HINCRBY", jobKey, "atm", 1)
end
rcall("HSET", jobKey, "delay", delay)
local maxEvents = getOrSetMaxEvents(metaKey)
rcall("ZADD", delayedKey, score, jobId)
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*",
  "event", "delayed", "jobId", jobId, "delay", fireAt)

if ARGV[8] == "1" then
  local fetched = takeNextJob(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey,
    delayedKey, metaKey, priorityCounterKey, markerKey, base, now, cmsgpack.unpack(ARGV[9]))
  if type(fetched[1]) == "table" then
    return fetched
  end
end

addDelayMarkerIfNeeded(markerKey, delayedKey)
return 0
