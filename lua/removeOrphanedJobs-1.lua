--[[
  Remove jobs that no state of the queue holds (one batch of
  Queue.removeOrphanedJobs, whose client finds the candidates by SCAN).

  Input:
    KEYS[1] BASE

    ARGV[1] N, then ARGV[2..N+1] the queue's key names to look in
    ARGV[N+2] M, then M names of a job's sub-keys to delete with it
    the remaining ARGV: candidate job ids

  A name whose key is a list, sorted set or set holds the ids in it (each
  key's type is read once); other types hold nothing. A candidate held by
  none is deleted with its sub-keys, and counted, whether it had keys or
  not.

  Output: how many candidates were deleted.
]]
local rcall = redis.call
local base = KEYS[1]

local stateCount = tonumber(ARGV[1])
local states = {}
for i = 1, stateCount do
  local key = base .. ARGV[1 + i]
  states[i] = {key, rcall("TYPE", key)["ok"]}
end
local subCount = tonumber(ARGV[stateCount + 2])
local firstCandidate = stateCount + subCount + 3

local function held(id)
  for _, state in ipairs(states) do
    local key, kind = state[1], state[2]
    if (kind == "list" and rcall("LPOS", key, id))
        or (kind == "zset" and rcall("ZSCORE", key, id))
        or (kind == "set" and rcall("SISMEMBER", key, id) == 1) then
      return true
    end
  end
  return false
end

local removed = 0
for c = firstCandidate, #ARGV do
  local id = ARGV[c]
  if not held(id) then
    local jobKey = base .. id
    local keys = {jobKey}
    for s = 1, subCount do
      keys[#keys + 1] = jobKey .. ":" .. ARGV[stateCount + 2 + s]
    end
    rcall("DEL", unpack(keys))
    removed = removed + 1
  end
end
return removed
