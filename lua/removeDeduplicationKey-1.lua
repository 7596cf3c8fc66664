--[[
  End a job's deduplication window early (Node Job.removeDeduplicationKey,
  RESEARCH-WORKER §6.2): the window key is deleted only while this job
  owns it, TTL or not.

  Input:
    KEYS[1] the window key (BASE .. "de:" .. deduplication id)

    ARGV[1] job id

  Output:
    1  the key held this id and was deleted
    0  another owner, or no key
]]
local rcall = redis.call
local windowKey = KEYS[1]

if rcall("GET", windowKey) == ARGV[1] then
  return rcall("DEL", windowKey)
end
return 0
