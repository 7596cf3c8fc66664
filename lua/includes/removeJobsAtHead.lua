--[[
  Remove (removeJobHard) the first `most` jobs of a list or a sorted set by
  rank (0: all), except the ids in `spared` (a set-like table, or nil), and
  take them out of it: a sorted set by ZREM; a list by trimming as many ids
  off its head as were removed (so a spared id among them leaves the list
  too, and the last removed ones may stay, as BullMQ's drain does).
  Returns `most` less the number removed: what a caller may still remove.
  Needs: rcall.
]]
--- @include "removeJobHard"
--- @include "callInBatches"

local function unspared(ids, spared)
  if not spared then
    return ids
  end
  local kept = {}
  for _, id in ipairs(ids) do
    if not spared[id] then
      kept[#kept + 1] = id
    end
  end
  return kept
end

local function removeListHead(listKey, base, most, spared)
  local ids = unspared(rcall("LRANGE", listKey, 0, most - 1), spared)
  for _, id in ipairs(ids) do
    removeJobHard(id, base)
  end
  rcall("LTRIM", listKey, #ids, -1)
  return most - #ids
end

local function removeZsetHead(zsetKey, base, most, spared)
  local ids = unspared(rcall("ZRANGE", zsetKey, 0, most - 1), spared)
  for _, id in ipairs(ids) do
    removeJobHard(id, base)
  end
  callInBatches("ZREM", zsetKey, ids)
  return most - #ids
end
