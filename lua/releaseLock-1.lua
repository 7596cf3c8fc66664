--[[
  Drop a job's lock if it still belongs to the caller (RESEARCH-WORKER
  §3). Shipped by BullMQ but called by neither client.

  Input:
    KEYS[1] the job's lock key (BASE .. jobId .. ":lock")

    ARGV[1] lock token
    ARGV[2] unused (a lock duration in the original calling convention)

  Output:
    1  the lock held this token and was deleted
    0  another token, or no lock
]]
local rcall = redis.call
local lockKey = KEYS[1]

if rcall("GET", lockKey) == ARGV[1] then
  return rcall("DEL", lockKey)
end
return 0
