--[[
  Whether the queue is at its global concurrency (Queue.isMaxed).

  Input:
    KEYS[1] meta
    KEYS[2] active

  Output: 1 when meta's concurrency is set and the active list reaches it;
  else nil (the Lua false a script returns reaches the client as nil).
]]
local rcall = redis.call

local concurrency = rcall("HGET", KEYS[1], "concurrency")
if concurrency and rcall("LLEN", KEYS[2]) >= tonumber(concurrency) then
  return 1
end
return false
