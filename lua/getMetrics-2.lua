--[[
  A finished set's metrics (Queue.getMetrics).

  Input:
    KEYS[1] metrics:<completed or failed>       (hash)
    KEYS[2] metrics:<completed or failed>:data  (list: a count per minute,
                                                 newest first)

    ARGV[1] start
    ARGV[2] end

  Output: {{count, prevTS, prevCount}, the points from start to end, the
  number of points}; a missing field is nil.
]]
local rcall = redis.call

return {
  rcall("HMGET", KEYS[1], "count", "prevTS", "prevCount"),
  rcall("LRANGE", KEYS[2], tonumber(ARGV[1]), tonumber(ARGV[2])),
  rcall("LLEN", KEYS[2]),
}
