--[[
  Pause or resume a queue globally (Queue.pause / Queue.resume).

  Since BullMQ 6 jobs stay in wait while paused: pausing only sets
  meta.paused and drops the wake-up markers. Resuming clears the flag,
  moves any legacy 'paused' list (BullMQ <= 5) back to wait, and writes
  the marker workers need.

  Input:
    KEYS[1] source list: wait when pausing, paused when resuming
    KEYS[2] target list: paused when pausing, wait when resuming
    KEYS[3] meta
    KEYS[4] prioritized
    KEYS[5] events stream
    KEYS[6] delayed
    KEYS[7] marker

    ARGV[1] "paused" or "resumed"
    ARGV[2] "0" to skip the event; anything else, or absent, emits it

  Output:
    the number of jobs still in the legacy paused list (0 when pausing,
    and when the whole list was moved)

  Pause:  HSET meta paused 1; DEL marker.
  Resume: HDEL meta paused; legacy list -> RENAME to wait when wait does
          not exist, otherwise up to 7000 ids from its left end are
          RPUSHed onto wait and trimmed off; then marker "0" when wait +
          prioritized is non-empty, else marker "1" from the delayed
          head (nothing when delayed is empty too).
  Then an untrimmed 'paused' / 'resumed' event unless ARGV[2] is "0".
]]
local rcall = redis.call
local sourceKey = KEYS[1]
local targetKey = KEYS[2]
local metaKey = KEYS[3]
local prioritizedKey = KEYS[4]
local eventsKey = KEYS[5]
local delayedKey = KEYS[6]
local markerKey = KEYS[7]

local action = ARGV[1]
local emitEvent = ARGV[2] ~= "0"

--- @include "includes/getWaitPlusPrioritizedCount"
--- @include "includes/addDelayMarkerIfNeeded"

local LEGACY_BATCH = 7000

-- Move the legacy paused list into wait; returns how many ids are left.
local function migrateLegacyPaused(legacyKey, waitKey)
  if rcall("EXISTS", legacyKey) ~= 1 then
    return 0
  end
  if rcall("EXISTS", waitKey) ~= 1 then
    rcall("RENAME", legacyKey, waitKey)
    return 0
  end
  local batch = rcall("LRANGE", legacyKey, 0, LEGACY_BATCH - 1)
  rcall("RPUSH", waitKey, unpack(batch))
  rcall("LTRIM", legacyKey, #batch, -1)
  return rcall("LLEN", legacyKey)
end

local legacyLeft = 0
if action == "paused" then
  rcall("HSET", metaKey, "paused", 1)
  rcall("DEL", markerKey)
else
  rcall("HDEL", metaKey, "paused")
  legacyLeft = migrateLegacyPaused(sourceKey, targetKey)
  if getWaitPlusPrioritizedCount(targetKey, prioritizedKey) > 0 then
    rcall("ZADD", markerKey, 0, "0")
  else
    addDelayMarkerIfNeeded(markerKey, delayedKey)
  end
end

if emitEvent then
  rcall("XADD", eventsKey, "*", "event", action)
end
return legacyLeft
