--[[
  Replace a job's data (RESEARCH-WORKER §8). No event is written.

  Input:
    KEYS[1] job key (BASE .. jobId)

    ARGV[1] job data, a JSON string stored verbatim

  Output:
     0  stored
    -1  the job hash does not exist (nothing written)
]]
local rcall = redis.call
local jobKey = KEYS[1]

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end
rcall("HSET", jobKey, "data", ARGV[1])
return 0
