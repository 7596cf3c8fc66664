--[[
  Renew the locks of several jobs at once: the worker's periodic lock
  renewal (RESEARCH-WORKER §3). Each job is handled as in extendLock.

  Input:
    KEYS[1] stalled

    ARGV[1] BASE ("<prefix>:<queue>:")
    ARGV[2] msgpack array of lock tokens
    ARGV[3] msgpack array of job ids (token i belongs to job i)
    ARGV[4] lock duration (ms)

  Output:
    array of the ids whose lock was NOT renewed (another token, no lock,
    or no token at that index), in input order; empty when all were.
]]
local rcall = redis.call
local stalledKey = KEYS[1]
local base = ARGV[1]
local duration = ARGV[4]

--- @include "includes/extendJobLock"

local tokens = cmsgpack.unpack(ARGV[2])
local jobIds = cmsgpack.unpack(ARGV[3])
local notRenewed = {}
for i, jobId in ipairs(jobIds) do
  if not extendJobLock(base .. jobId .. ":lock", stalledKey, tokens[i], duration, jobId) then
    notRenewed[#notRenewed + 1] = jobId
  end
end
return notRenewed
