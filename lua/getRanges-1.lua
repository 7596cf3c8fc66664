--[[
  The job ids of each state asked for, from start to end (Queue.getRanges).

  Input:
    KEYS[1] the queue's prefix: each state's key is the prefix and the name

    ARGV[1] start
    ARGV[2] end
    ARGV[3] "1" for ascending order
    ARGV[...] state names

  Output: one id list per name. Sorted sets are read by rank (ZRANGE, or
  ZREVRANGE when descending). Lists (wait, paused, active: newest at the
  head) are read as stored when descending; ascending, the same window is
  counted from the tail, LRANGE -(end+1) -(start+1) with an index of -1
  read as 0, and returned in list order (the client reverses it). A legacy
  marker at wait's or paused's tail is dropped first; alone, the list
  answers no ids.
]]
local rcall = redis.call

--- @include "includes/dropLegacyMarker"
--- @include "includes/fromTail"

local first = tonumber(ARGV[1])
local last = tonumber(ARGV[2])
local ascending = ARGV[3] == "1"

local function listRange(key)
  if ascending then
    return rcall("LRANGE", key, fromTail(last), fromTail(first))
  end
  return rcall("LRANGE", key, first, last)
end

local ranges = {}
for i = 4, #ARGV do
  local name = ARGV[i]
  local key = KEYS[1] .. name
  if name == "wait" or name == "paused" then
    if dropLegacyMarker(key) == 0 then
      ranges[#ranges + 1] = {}
    else
      ranges[#ranges + 1] = listRange(key)
    end
  elseif name == "active" then
    ranges[#ranges + 1] = listRange(key)
  elseif ascending then
    ranges[#ranges + 1] = rcall("ZRANGE", key, first, last)
  else
    ranges[#ranges + 1] = rcall("ZREVRANGE", key, first, last)
  end
end
return ranges
