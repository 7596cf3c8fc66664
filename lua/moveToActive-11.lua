--[[
  Fetch the next job for a worker: promote due delayed jobs, honour the
  rate limit and pause/concurrency, then move one job to active and lock it.

  Input:
    KEYS[1]  wait
    KEYS[2]  active
    KEYS[3]  prioritized
    KEYS[4]  events stream
    KEYS[5]  stalled     (unused here)
    KEYS[6]  limiter     (rate limit counter)
    KEYS[7]  delayed
    KEYS[8]  paused      (legacy; unused)
    KEYS[9]  meta
    KEYS[10] pc          (priority counter)
    KEYS[11] marker

    ARGV[1] BASE ("<prefix>:<queue>:")
    ARGV[2] now (ms); used for the sweep and stored as processedOn
    ARGV[3] msgpack map:
            token         lock value; "0" means take no lock
            lockDuration  lock PX in ms
            limiter       {max, duration} or nil (meta max/duration win for
                          max; opts duration wins over meta duration)
            name          worker name, stored as pb when present

  Output (4-array):
    {flat HGETALL of the job, jobId, 0, 0}  a job was activated
    {0, 0, pttl, 0}                         rate limited for pttl ms
    {0, 0, 0, 0}                            paused or maxed (after the
                                            sweep), or nothing at all
    {0, 0, 0, next}                         nothing ready; next is the
                                            delayed head / 0x1000, which
                                            Redis truncates to an integer

  Order: meta read -> promotion sweep (up to 1000 jobs with F <= now) ->
  rate limit -> paused/maxed -> wait first, then prioritized (pc is
  deleted when prioritized is empty) -> activate.
]]
local rcall = redis.call
local waitKey = KEYS[1]
local activeKey = KEYS[2]
local prioritizedKey = KEYS[3]
local eventsKey = KEYS[4]
local limiterKey = KEYS[6]
local delayedKey = KEYS[7]
local metaKey = KEYS[9]
local priorityCounterKey = KEYS[10]
local markerKey = KEYS[11]

local base = ARGV[1]
local now = ARGV[2]
local workerOpts = cmsgpack.unpack(ARGV[3])

--- @include "includes/takeNextJob"

return takeNextJob(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
  metaKey, priorityCounterKey, markerKey, base, now, workerOpts)
