--[[
  A finishing job (completed or failed) gives up its deduplication key
  BASE .. "de:" .. deid, but only when the key is permanent (no TTL) and
  still names this job. A key with a running TTL is left to expire, so
  it keeps deduplicating until then. A key whose PTTL reads 0 is expiring
  right now and is deleted whoever it names.
  deduplicationId is the job's deid field, or nil/false when it has none.
  Needs: rcall.
]]
local function releaseDeduplicationOnFinish(base, deduplicationId, jobId)
  if not deduplicationId then
    return
  end
  local dedupKey = base .. "de:" .. deduplicationId
  local ttl = rcall("PTTL", dedupKey)
  if ttl == 0 then
    rcall("DEL", dedupKey)
  elseif ttl == -1 and rcall("GET", dedupKey) == jobId then
    rcall("DEL", dedupKey)
  end
end
