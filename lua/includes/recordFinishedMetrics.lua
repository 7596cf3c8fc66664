--[[
  Per-minute throughput of finished jobs: a hash (count, prevTS,
  prevCount) and its ":data" list, newest data point at index 0.

  Every call counts the job (HINCRBY count). The first call ever only
  records prevTS = now, prevCount = 0. Later, when the minute
  floor(now / 60000) has moved on by N >= 1 since prevTS (N capped at
  maxDataPoints), the finished-jobs delta since the last point
  (count before this job - prevCount) is pushed, then N - 1 zeros on
  top of it, the list is cut to maxDataPoints, and prevCount/prevTS move
  to (count before this job, now). Within the same minute nothing else
  changes, so the job that opens a new minute shows up in the next
  point.
  Needs: rcall.
]]
--- @include "callInBatches"

local function recordFinishedMetrics(metricsKey, maxDataPoints, now)
  local countBefore = rcall("HINCRBY", metricsKey, "count", 1) - 1
  local lastPointAt = rcall("HGET", metricsKey, "prevTS")
  if not lastPointAt then
    rcall("HSET", metricsKey, "prevTS", now, "prevCount", 0)
    return
  end

  local capacity = tonumber(maxDataPoints)
  local minutesPassed = math.floor(now / 60000) - math.floor(lastPointAt / 60000)
  if minutesPassed > capacity then
    minutesPassed = capacity
  end
  if minutesPassed < 1 then
    return
  end

  local lastCount = tonumber(rcall("HGET", metricsKey, "prevCount"))
  local points = {countBefore - lastCount}
  for i = 2, minutesPassed do
    points[i] = 0
  end
  local dataKey = metricsKey .. ":data"
  callInBatches("LPUSH", dataKey, points)
  rcall("LTRIM", dataKey, 0, capacity - 1)
  rcall("HSET", metricsKey, "prevCount", countBefore, "prevTS", now)
end
