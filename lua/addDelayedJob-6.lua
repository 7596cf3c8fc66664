--[[
  Add a job to the delayed zset.

  Input:
    KEYS[1] marker
    KEYS[2] meta
    KEYS[3] id           (job id counter)
    KEYS[4] delayed
    KEYS[5] completed
    KEYS[6] events stream

    ARGV[1] msgpack array:
            [1] BASE ("<prefix>:<queue>:")
            [2] custom job id, or "" for an auto id
            [3] job name
            [4] timestamp T (ms)
            [5] parent job key, or nil
            [6] parent dependencies key, or nil
            [7] parent {id, queueKey, fpof?, rdof?, idof?, cpof?}, or nil
            [8] repeat job key, or nil
            [9] deduplication key BASE.."de:"..id, or nil
            [10] defer parent release, or nil: set by flow inserts, whose
                 last call (releaseParentIfNoPendingDependencies)
                 releases the parents (includes/handleDuplicatedJob)
    ARGV[2] job data, a JSON string stored verbatim
    ARGV[3] msgpack opts map (reads delay and de = {id, ttl?, extend?,
            replace?}; for the hash, priority)

  Output:
    jobId       the new job's id (string)
    existing id a job with this custom id already exists ('duplicated' event)
    owner id    deduplicated: the id owning the de: window (nothing stored)
    -5          the parent job does not exist
    -7          the existing job belongs to another, still existing parent
                (with [10], the add's parent gets flowAttachmentFailed "1")

  Writes: INCR id; meta opts.maxLenEvents default; dedup window
  (includes/deduplicateJob); job hash (deid = opts.de.id) + 'added';
  ZADD delayed with the band-bumped score of F = T + delay (delay > 0
  only); trimmed 'delayed' event whose delay field is F; marker "1" set to
  the new head / 0x1000 (no paused check); SADD into the parent's
  dependencies.

  Order: INCR id -> duplicate custom id (wins) -> deduplication -> store.
  Not implemented: opts.de.keepLastIfActive (treated as absent) and the npm-only
  reschedule of a delayed duplicate.
]]
local rcall = redis.call
local markerKey = KEYS[1]
local metaKey = KEYS[2]
local idKey = KEYS[3]
local delayedKey = KEYS[4]
local completedKey = KEYS[5]
local eventsKey = KEYS[6]

local args = cmsgpack.unpack(ARGV[1])
local data = ARGV[2]
local opts = cmsgpack.unpack(ARGV[3])

--- @include "includes/beginJobAdd"
--- @include "includes/deduplicateJob"
--- @include "includes/storeJob"
--- @include "includes/getDelayedScore"
--- @include "includes/addDelayMarkerIfNeeded"

local job, earlyReply = beginJobAdd(args, idKey, metaKey, eventsKey, completedKey)
if not job then
  return earlyReply
end

local dedupOwner = deduplicateJob(job, args[1], args[9], opts["de"], delayedKey,
  eventsKey)
if dedupOwner then
  return dedupOwner
end

local timestamp = args[4]
local delay = storeJob(eventsKey, job, args[3], data, opts, timestamp)

local score, fireAt = getDelayedScore(delayedKey, timestamp, tonumber(delay))
rcall("ZADD", delayedKey, score, job.id)
rcall("XADD", eventsKey, "MAXLEN", "~", job.maxEvents, "*",
  "event", "delayed", "jobId", job.id, "delay", fireAt)
addDelayMarkerIfNeeded(markerKey, delayedKey)

finishJobAdd(job)
return job.id
