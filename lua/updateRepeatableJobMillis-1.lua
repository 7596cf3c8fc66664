--[[
  A worker's next iteration of a legacy repeatable job (5.x): move the
  key's score to the next fire time, only while the queue holds the key.

  Input:
    KEYS[1] repeat

    ARGV[1] next fire time (ms), as the client computed it
    ARGV[2] the repeat key (md5 of the concatenated key, or repeat.key)
    ARGV[3] the concatenated key "name:jobId:endDate:tz:pattern-or-every"

  Output:
    the key rescored (the repeat key first), or "" when the queue holds
    neither: a removed repeatable job stays removed
]]
local rcall = redis.call
for i = 2, 3 do
  if rcall("ZSCORE", KEYS[1], ARGV[i]) then
    rcall("ZADD", KEYS[1], ARGV[1], ARGV[i])
    return ARGV[i]
  end
end
return ""
