--[[
  Count the waiting jobs of each priority asked for
  (Queue.getCountsPerPriority).

  Input:
    KEYS[1] wait
    KEYS[2] prioritized

    ARGV[1], ARGV[2], ... the priorities

  Output: one count per priority: wait's length for 0; for p, the
  prioritized jobs in p's band of scores, [p * 2^32, (p + 1) * 2^32 - 1]
  (a score is the priority shifted 32 bits plus the priority counter).
]]
local rcall = redis.call

local band = 0x100000000
local counts = {}
for i = 1, #ARGV do
  local priority = tonumber(ARGV[i])
  if priority == 0 then
    counts[i] = rcall("LLEN", KEYS[1])
  else
    counts[i] = rcall("ZCOUNT", KEYS[2], priority * band, (priority + 1) * band - 1)
  end
end
return counts
