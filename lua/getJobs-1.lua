--[[
  The jobs of each state asked for, with their hashes (Queue.getJobs).

  Input:
    KEYS[1] the queue's prefix: a state's key, and a job's, is the prefix and
            the name or the id

    ARGV[1] start
    ARGV[2] end
    ARGV[3] "1" for ascending order
    ARGV[4] the most reads per state (the backfill bound)
    ARGV[...] state names

  Output: per name, {id, {field, value, ...}} for each id read that has a
  hash; an id without one is skipped. Sorted sets are read by rank; lists
  as stored when descending, and ascending from the tail, reversed here
  (the oldest job first). When start and end are both >= 0, skipped ids are
  made up for by reading on, a window at a time, up to the bound. A legacy
  marker at wait's or paused's tail is dropped first.
]]
local rcall = redis.call

--- @include "includes/dropLegacyMarker"
--- @include "includes/fromTail"

local first = tonumber(ARGV[1])
local last = tonumber(ARGV[2])
local ascending = ARGV[3] == "1"
local maxReads = tonumber(ARGV[4])
local prefix = KEYS[1]

-- The ids from rank `from` to rank `to` of one state, in the order asked.
local function readIds(key, isList, from, to, length)
  if not isList then
    if ascending then
      return rcall("ZRANGE", key, from, to)
    end
    return rcall("ZREVRANGE", key, from, to)
  end
  if not ascending then
    return rcall("LRANGE", key, from, to)
  end
  -- A window that starts past the list's end holds nothing.
  if length ~= nil and from >= length then
    return {}
  end
  local window = rcall("LRANGE", key, fromTail(to), fromTail(from))
  local oldestFirst = {}
  for i = #window, 1, -1 do
    oldestFirst[#oldestFirst + 1] = window[i]
  end
  return oldestFirst
end

local function jobsOf(name)
  local key = prefix .. name
  local isList = name == "wait" or name == "paused" or name == "active"
  local left
  if name == "wait" or name == "paused" then
    left = dropLegacyMarker(key)
  end
  local bounded = first >= 0 and last >= 0
  local length
  if isList and ascending and bounded then
    length = left or rcall("LLEN", key)
  end

  local found = {}
  local function take(ids, wanted)
    for _, id in ipairs(ids) do
      if wanted ~= nil and #found >= wanted then
        return
      end
      local fields = rcall("HGETALL", prefix .. id)
      if #fields > 0 then
        found[#found + 1] = {id, fields}
      end
    end
  end

  if not bounded then
    take(readIds(key, isList, first, last, length), nil)
    return found
  end
  local wanted = last - first + 1
  local from = first
  local reads = 0
  while #found < wanted and reads < maxReads do
    local ids = readIds(key, isList, from, from + wanted - 1, length)
    if #ids == 0 then
      break
    end
    take(ids, wanted)
    from = from + #ids
    reads = reads + 1
  end
  return found
end

local results = {}
for i = 5, #ARGV do
  results[#results + 1] = jobsOf(ARGV[i])
end
return results
