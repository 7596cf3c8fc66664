--[[
  Append a row to a job's log list, optionally keeping only the newest
  rows (RESEARCH-WORKER §8). Python's client does not use this script.

  Input:
    KEYS[1] job key (BASE .. jobId)
    KEYS[2] the job's log list (BASE .. jobId .. ":logs")

    ARGV[1] job id (unused)
    ARGV[2] the log row
    ARGV[3] keepLogs k, or "" to keep everything (Node sends "" for 0).
            A literal "0" fails in LTRIM after the RPUSH, as in BullMQ.

  Output:
    the list's length after the RPUSH, or min(k, that length) when
    trimmed to the last k rows; -1 when the job hash does not exist (no
    list is created)
]]
local rcall = redis.call
local jobKey = KEYS[1]
local logsKey = KEYS[2]
local keepLogs = ARGV[3]

if rcall("EXISTS", jobKey) ~= 1 then
  return -1
end
local length = rcall("RPUSH", logsKey, ARGV[2])
if keepLogs == "" then
  return length
end
local keep = tonumber(keepLogs)
rcall("LTRIM", logsKey, -keep, -1)
return math.min(keep, length)
