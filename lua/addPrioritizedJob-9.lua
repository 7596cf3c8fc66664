--[[
  Add a job with priority P > 0 to the prioritized zset.

  Input:
    KEYS[1] marker
    KEYS[2] meta
    KEYS[3] id           (job id counter)
    KEYS[4] prioritized
    KEYS[5] delayed      (dedup replace only)
    KEYS[6] completed
    KEYS[7] active
    KEYS[8] events stream
    KEYS[9] pc           (priority counter)

    ARGV[1] msgpack array:
            [1] BASE ("<prefix>:<queue>:")
            [2] custom job id, or "" for an auto id
            [3] job name
            [4] timestamp (ms)
            [5] parent job key, or nil
            [6] parent dependencies key, or nil
            [7] parent {id, queueKey, fpof?, rdof?, idof?, cpof?}, or nil
            [8] repeat job key, or nil
            [9] deduplication key BASE.."de:"..id, or nil
            [10] defer parent release, or nil: set by flow inserts, whose
                 last call (releaseParentIfNoPendingDependencies)
                 releases the parents (includes/handleDuplicatedJob)
    ARGV[2] job data, a JSON string stored verbatim
    ARGV[3] msgpack opts map (reads priority and de = {id, ttl?, extend?,
            replace?}; for the hash, delay; lifo is ignored)

  Output:
    jobId       the new job's id (string)
    existing id a job with this custom id already exists ('duplicated' event)
    owner id    deduplicated: the id owning the de: window (nothing stored)
    -5          the parent job does not exist
    -7          the existing job belongs to another, still existing parent
                (with [10], the add's parent gets flowAttachmentFailed "1")

  Writes: INCR id; meta opts.maxLenEvents default; dedup window
  (includes/deduplicateJob); job hash (deid = opts.de.id) + 'added';
  INCR pc and ZADD prioritized at P*2^32 + pc % 2^32; marker "0" unless
  paused or maxed; trimmed 'waiting' event; SADD into the parent's
  dependencies.

  Order: INCR id -> duplicate custom id (wins) -> deduplication -> store.
  Not implemented: opts.de.keepLastIfActive (treated as absent).
]]
local rcall = redis.call
local markerKey = KEYS[1]
local metaKey = KEYS[2]
local idKey = KEYS[3]
local prioritizedKey = KEYS[4]
local completedKey = KEYS[6]
local activeKey = KEYS[7]
local eventsKey = KEYS[8]
local priorityCounterKey = KEYS[9]
local delayedKey = KEYS[5]

local args = cmsgpack.unpack(ARGV[1])
local data = ARGV[2]
local opts = cmsgpack.unpack(ARGV[3])

--- @include "includes/beginJobAdd"
--- @include "includes/deduplicateJob"
--- @include "includes/storeJob"
--- @include "includes/isQueuePausedOrMaxed"
--- @include "includes/insertPrioritized"

local job, earlyReply = beginJobAdd(args, idKey, metaKey, eventsKey, completedKey)
if not job then
  return earlyReply
end

local dedupOwner = deduplicateJob(job, args[1], args[9], opts["de"], delayedKey,
  eventsKey)
if dedupOwner then
  return dedupOwner
end

local _, priority = storeJob(eventsKey, job, args[3], data, opts, args[4])

insertPrioritized(prioritizedKey, priorityCounterKey, markerKey, priority, job.id,
  isQueuePausedOrMaxed(metaKey, activeKey))
rcall("XADD", eventsKey, "MAXLEN", "~", job.maxEvents, "*",
  "event", "waiting", "jobId", job.id)

finishJobAdd(job)
return job.id
