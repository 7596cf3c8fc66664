--[[
  Count the jobs of each state asked for (Queue.getJobCounts).

  Input:
    KEYS[1] the queue's prefix ("bull:<queue>:"): each state's key is the
            prefix and the state's name

    ARGV[1] from 6.7.0, optionally a cutoff in ms: a number here means the
            delayed count takes only the jobs due before it, and the names
            start at ARGV[2]
    ARGV[...] state names

  Output: one count per name, in order. wait, paused and active are lists
  (LLEN, after dropping a legacy marker from wait's or paused's tail); any
  other name is a sorted set (ZCARD).
]]
local rcall = redis.call

--- @include "includes/dropLegacyMarker"

local cutoff = tonumber(ARGV[1])
local first = cutoff and 2 or 1
local counts = {}
for i = first, #ARGV do
  local name = ARGV[i]
  local key = KEYS[1] .. name
  local count
  if name == "wait" or name == "paused" then
    count = dropLegacyMarker(key) or rcall("LLEN", key)
  elseif name == "active" then
    count = rcall("LLEN", key)
  elseif name == "delayed" and cutoff then
    -- A delayed score is due * 0x1000 plus 12 low bits: everything below
    -- cutoff * 0x1000 is due before the cutoff.
    count = rcall("ZCOUNT", key, "-inf", cutoff * 0x1000 - 1)
  else
    count = rcall("ZCARD", key)
  end
  counts[#counts + 1] = count
end
return counts
