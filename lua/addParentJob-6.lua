--[[
  Add a parent job (a flow's parent): it waits in waiting-children until
  its children are done.

  Input:
    KEYS[1] meta
    KEYS[2] id           (job id counter)
    KEYS[3] delayed      (passed to deduplication; never written here)
    KEYS[4] waiting-children
    KEYS[5] completed
    KEYS[6] events stream

    ARGV[1] msgpack array:
            [1] BASE ("<prefix>:<queue>:")
            [2] custom job id, or "" for an auto id
            [3] job name
            [4] timestamp (ms)
            [5] parent job key, or nil (a parent that is itself a child)
            [6] parent dependencies key, or nil
            [7] parent {id, queueKey, fpof?, rdof?, idof?, cpof?}, or nil
            [8] repeat job key, or nil
            [9] deduplication key BASE.."de:"..id, or nil
            [10] defer parent release, or nil: set by flow inserts, whose
                 last call (releaseParentIfNoPendingDependencies)
                 releases the parents (includes/handleDuplicatedJob)
    ARGV[2] job data, a JSON string stored verbatim
    ARGV[3] msgpack opts map (reads de = {id, ttl?, extend?}; for the
            hash, delay and priority, which only act once the parent is
            released)

  Output:
    jobId       the new job's id (string)
    existing id a job with this custom id already exists ('duplicated'
                event; it stays where it is, waiting-children untouched)
    owner id    deduplicated: the id owning the de: window (nothing stored)
    -5          the parent job (ARGV[1][5]) does not exist
    -7          the existing job belongs to another, still existing parent
                (with [10], the add's parent gets flowAttachmentFailed "1")

  Writes: INCR id; meta opts.maxLenEvents default; dedup window
  (includes/deduplicateJob, without replace); job hash + 'added'; ZADD
  waiting-children scored with the timestamp; trimmed 'waiting-children'
  event; SADD into its own parent's dependencies.

  Order: parent check (-5) -> INCR id -> duplicate custom id (wins) ->
  deduplication -> store -> waiting-children -> parent's dependencies.
  Not implemented: opts.de.keepLastIfActive (treated as absent).
]]
local rcall = redis.call
local metaKey = KEYS[1]
local idKey = KEYS[2]
local delayedKey = KEYS[3]
local waitingChildrenKey = KEYS[4]
local completedKey = KEYS[5]
local eventsKey = KEYS[6]

local args = cmsgpack.unpack(ARGV[1])
local data = ARGV[2]
local opts = cmsgpack.unpack(ARGV[3])

--- @include "includes/beginJobAdd"
--- @include "includes/deduplicateJob"
--- @include "includes/storeJob"

local job, earlyReply = beginJobAdd(args, idKey, metaKey, eventsKey, completedKey)
if not job then
  return earlyReply
end

-- A parent is never replaced by deduplication (BullMQ dedups parents
-- without the replace mode), so only id, ttl and extend are passed on.
local dedupOpts = opts["de"]
if dedupOpts then
  dedupOpts = {id = dedupOpts["id"], ttl = dedupOpts["ttl"], extend = dedupOpts["extend"]}
end
local dedupOwner = deduplicateJob(job, args[1], args[9], dedupOpts, delayedKey, eventsKey)
if dedupOwner then
  return dedupOwner
end

local timestamp = args[4]
storeJob(eventsKey, job, args[3], data, opts, timestamp)

rcall("ZADD", waitingChildrenKey, timestamp, job.id)
rcall("XADD", eventsKey, "MAXLEN", "~", job.maxEvents, "*",
  "event", "waiting-children", "jobId", job.id)

finishJobAdd(job)
return job.id
