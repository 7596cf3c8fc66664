--[[
  Count a parent's children by how they stand (Job.getDependenciesCount).

  Input:
    KEYS[1] job:processed     (hash: done children and their values)
    KEYS[2] job:dependencies  (set: pending children)
    KEYS[3] job:failed        (hash: children ignored or failed with
                               idof / cpof, with their reasons)
    KEYS[4] job:unsuccessful  (zset: children failed with fpof)

    ARGV[1], ARGV[2], ... the types asked for, each one of
            "processed", "unprocessed", "ignored", "failed"

  Output: one count per ARGV entry, in the order asked. Any type other
  than the first three counts the unsuccessful zset, as "failed" does.
]]
local rcall = redis.call

local counts = {}
for i, kind in ipairs(ARGV) do
  if kind == "processed" then
    counts[i] = rcall("HLEN", KEYS[1])
  elseif kind == "unprocessed" then
    counts[i] = rcall("SCARD", KEYS[2])
  elseif kind == "ignored" then
    counts[i] = rcall("HLEN", KEYS[3])
  else
    counts[i] = rcall("ZCARD", KEYS[4])
  end
end
return counts
