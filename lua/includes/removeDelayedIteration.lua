--[[
  A scheduled job's current iteration, while it is still delayed: the job
  <prefix><score of member in the repeat zset> leaves delayed with its
  keys, and a 'removed' event (prev delayed, untrimmed) says so. One that
  already waits or runs stays. Used when a job scheduler or a repeatable
  job is removed.
  Needs: rcall, removeJobKeys.
]]
local function removeDelayedIteration(repeatKey, delayedKey, eventsKey, base,
    prefix, member)
  local millis = rcall("ZSCORE", repeatKey, member)
  if millis then
    local jobId = prefix .. millis
    if rcall("ZREM", delayedKey, jobId) == 1 then
      removeJobKeys(base .. jobId)
      rcall("XADD", eventsKey, "*", "event", "removed", "jobId", jobId, "prev",
        "delayed")
    end
  end
end
