--[[
  Write a job's stacktrace and failedReason.

  Input:
    KEYS[1] the job's key
    ARGV[1] stacktrace (JSON text)
    ARGV[2] failedReason

  Output: 0, or -1 without the job.
]]
local rcall = redis.call

if rcall("EXISTS", KEYS[1]) == 0 then
  return -1
end
rcall("HSET", KEYS[1], "stacktrace", ARGV[1], "failedReason", ARGV[2])
return 0
