--[[
  "Paused or maxed": meta.paused is present, or meta.concurrency is set
  and the active list already holds that many jobs.
  evalPausedOrMaxed takes the two meta fields already read, so scripts
  that read more of meta (getQueueMetadata) can share the rule.
  Needs: rcall.
]]
local function evalPausedOrMaxed(pausedField, concurrencyField, activeKey)
  if pausedField then
    return true
  end
  if concurrencyField then
    return rcall("LLEN", activeKey) >= tonumber(concurrencyField)
  end
  return false
end

local function isQueuePausedOrMaxed(metaKey, activeKey)
  local fields = rcall("HMGET", metaKey, "paused", "concurrency")
  return evalPausedOrMaxed(fields[1], fields[2], activeKey)
end
