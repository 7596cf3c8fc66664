--[[
  The part every add script shares (RESEARCH §7.2, steps 1-4 and 8).

  beginJobAdd(args, idKey, metaKey, eventsKey, completedKey)
    args is the decoded packed-args array:
      [1] BASE  [2] custom id or ""  [3] name  [4] timestamp
      [5] parentKey  [6] parent dependencies key  [7] parent table
      [8] repeat job key  [9] dedup key (unused here)
      [10] defer parent release (flow inserts; handleDuplicatedJob)
    Order: parent must exist (-5), INCR id (every add, custom ids too),
    default meta opts.maxLenEvents, then the duplicate check for custom ids.
    Returns the job context table, or nil plus the reply to return early
    (-5, -7, or the existing id of a duplicate).

  finishJobAdd(job)
    Registers the new job key as a pending dependency of its parent.
  Needs: rcall.
]]
--- @include "getOrSetMaxEvents"
--- @include "handleDuplicatedJob"

local function beginJobAdd(args, idKey, metaKey, eventsKey, completedKey)
  local base, customId = args[1], args[2]
  local job = {
    parentKey = args[5],
    parentDepsKey = args[6],
    repeatJobKey = args[8],
  }
  if job.parentKey ~= nil then
    if rcall("EXISTS", job.parentKey) ~= 1 then
      return nil, -5
    end
    job.parent = args[7]
    job.parentJson = cjson.encode(args[7])
  end

  local counter = rcall("INCR", idKey)
  job.maxEvents = getOrSetMaxEvents(metaKey)

  local isCustom = customId ~= nil and customId ~= ""
  if isCustom then
    job.id = customId
  else
    job.id = tostring(counter)
  end
  job.key = base .. job.id

  if isCustom and rcall("EXISTS", job.key) == 1 then
    return nil, handleDuplicatedJob(job.key, job.id, job.parentKey, job.parent,
      job.parentJson, job.parentDepsKey, completedKey, eventsKey, job.maxEvents, args[4],
      args[10])
  end
  return job
end

local function finishJobAdd(job)
  if job.parentDepsKey ~= nil then
    rcall("SADD", job.parentDepsKey, job.key)
  end
end
