--[[
  Whether a job has finished (Job.isCompleted, Job.isFailed,
  waitUntilFinished).

  Input:
    KEYS[1] completed
    KEYS[2] failed
    KEYS[3] the job's key

    ARGV[1] job id
    ARGV[2] "1" to answer the value too

  Output: 1 completed, 2 failed, 0 neither, -1 without the job's hash. With
  ARGV[2] "1": {1, returnvalue}, {2, failedReason}, {0}, or {-1, message}.
]]
local rcall = redis.call
local withValue = ARGV[2] == "1"

if rcall("EXISTS", KEYS[3]) == 0 then
  if withValue then
    return {-1, "Missing key for job " .. KEYS[3] .. ". isFinished"}
  end
  return -1
end

local finished = {{KEYS[1], 1, "returnvalue"}, {KEYS[2], 2, "failedReason"}}
for _, set in ipairs(finished) do
  if rcall("ZSCORE", set[1], ARGV[1]) then
    if withValue then
      return {set[2], rcall("HGET", KEYS[3], set[3])}
    end
    return set[2]
  end
end

if withValue then
  return {0}
end
return 0
