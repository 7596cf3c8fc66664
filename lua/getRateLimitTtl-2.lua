--[[
  How long the queue is still rate limited (RESEARCH-WORKER §5.2).

  Input:
    KEYS[1] limiter     (STRING counter)
    KEYS[2] meta

    ARGV[1] maxJobs; "0" means the caller has none (Node sends
            maxJobs ?? "0")

  Output:
    ARGV[1] other than "0": the limiter's PTTL when the counter has
      reached maxJobs and the PTTL is positive, else 0 (a PTTL of 0
      deletes the key)
    ARGV[1] "0", meta.max set: the same rule with meta.max
    ARGV[1] "0", no meta.max: the raw PTTL (-1 without a TTL, -2 without
      the key)
]]
local rcall = redis.call
local limiterKey = KEYS[1]
local metaKey = KEYS[2]

--- @include "includes/getRateLimitTTL"

if ARGV[1] ~= "0" then
  return getRateLimitTTL(tonumber(ARGV[1]), limiterKey)
end
local metaMax = rcall("HGET", metaKey, "max")
if metaMax then
  return getRateLimitTTL(tonumber(metaMax), limiterKey)
end
return rcall("PTTL", limiterKey)
