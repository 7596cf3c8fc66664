--[[
  Start processing a job that fetchNextJob has put on the active list.
  - rate limiter: count the job (INCR; PEXPIRE with the window on the
    first hit), except jobs carrying a deferred failure (defa). With a max
    but no duration anywhere, PEXPIRE is skipped (BullMQ raises a script
    error there, after the job already sits in active);
  - lock: SET <job>:lock token PX lockDuration, unless the token is "0";
  - untrimmed 'active ... prev waiting' event;
  - processedOn = now (pb = worker name when one was sent), ats += 1;
  - base marker "0" always, so another worker looks for more work.
  Returns {flat HGETALL of the job, jobId, 0, 0}.
  Needs: rcall.
]]
--- @include "addBaseMarkerIfNeeded"

local function activateJob(base, limiterKey, eventsKey, markerKey, jobId, now,
                           maxJobs, limiterDuration, workerOpts)
  local jobKey = base .. jobId
  if maxJobs and rcall("HEXISTS", jobKey, "defa") == 0 then
    if rcall("INCR", limiterKey) == 1 then
      local window = tonumber(limiterDuration)
      if window then
        rcall("PEXPIRE", limiterKey, math.floor(math.abs(window)))
      end
    end
  end

  local token = workerOpts["token"]
  if token ~= "0" then
    rcall("SET", jobKey .. ":lock", token, "PX", workerOpts["lockDuration"])
  end

  rcall("XADD", eventsKey, "*", "event", "active", "jobId", jobId, "prev", "waiting")
  if workerOpts["name"] then
    rcall("HMSET", jobKey, "processedOn", now, "pb", workerOpts["name"])
  else
    rcall("HMSET", jobKey, "processedOn", now)
  end
  rcall("HINCRBY", jobKey, "ats", 1)
  addBaseMarkerIfNeeded(markerKey, false)
  return {rcall("HGETALL", jobKey), jobId, 0, 0}
end
