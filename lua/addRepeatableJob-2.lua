--[[
  Store a legacy repeatable job (5.x; job schedulers replace it at 6.0.0).

  Input:
    KEYS[1] repeat
    KEYS[2] delayed

    ARGV[1] next fire time (ms), as the client computed it
    ARGV[2] msgpack {name, tz?, pattern?, endDate?, every?}
    ARGV[3] the concatenated key "name:jobId:endDate:tz:pattern-or-every"
    ARGV[4] the repeat key (md5 of the concatenated key, or repeat.key)
    ARGV[5] BASE ("<prefix>:<queue>:")

  Output:
    the key stored: the concatenated one when the queue still holds it,
    else the repeat key

  The previous iteration of the repeat key, repeat:<key>:<previous score>,
  goes while it is delayed (its keys and the deduplication key it owns; no
  event), unless the job of the new fire time exists: re-adding at the same
  fire time keeps the iteration. The hash is written over, never deleted.
  The client adds the new iteration itself.
]]
local rcall = redis.call
local repeatKey, delayedKey = KEYS[1], KEYS[2]
local fireAt, concatKey, key, base = ARGV[1], ARGV[3], ARGV[4], ARGV[5]

--- @include "includes/releaseDedupKeyOfRemovedJob"
--- @include "includes/removeJobKeys"
--- @include "includes/removeUnparentedJob"

local previous = rcall("ZSCORE", repeatKey, key)
if previous then
  local jobId = "repeat:" .. key .. ":" .. previous
  if rcall("ZSCORE", delayedKey, jobId)
      and rcall("EXISTS", base .. "repeat:" .. key .. ":" .. fireAt) == 0 then
    removeUnparentedJob(base, jobId)
    rcall("ZREM", delayedKey, jobId)
  end
end

local stored = key
if rcall("ZSCORE", repeatKey, concatKey) then
  stored = concatKey
end
rcall("ZADD", repeatKey, fireAt, stored)
local opts = cmsgpack.unpack(ARGV[2])
local fields = {"name", opts["name"]}
for _, name in ipairs({"tz", "pattern", "endDate", "every"}) do
  if opts[name] then
    fields[#fields + 1] = name
    fields[#fields + 1] = opts[name]
  end
end
rcall("HSET", repeatKey .. ":" .. stored, unpack(fields))
return stored
