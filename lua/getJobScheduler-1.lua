--[[
  Read a job scheduler.

  Input:
    KEYS[1] repeat
    ARGV[1] scheduler id

  Output:
    {HGETALL of its hash, its next fire time}, or an empty array when the
    scheduler does not exist.
]]
local rcall = redis.call
local nextMillis = rcall("ZSCORE", KEYS[1], ARGV[1])
if not nextMillis then
  return {}
end
return {rcall("HGETALL", KEYS[1] .. ":" .. ARGV[1]), nextMillis}
