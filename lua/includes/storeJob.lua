--[[
  Write the new job hash in one HMSET and log the 'added' event
  (untrimmed). Field order: name, data, opts, timestamp, delay, priority,
  then only when present parentKey + parent, rjk, deid.
  data is the caller's JSON string, stored verbatim; opts is re-encoded
  from the decoded msgpack map with cjson.
  Returns the job's delay and priority (0 when absent).
  Needs: rcall.
]]
local function storeJob(eventsKey, job, name, data, opts, timestamp)
  local delay = opts["delay"] or 0
  local priority = opts["priority"] or 0
  local fields = {
    "name", name,
    "data", data,
    "opts", cjson.encode(opts),
    "timestamp", timestamp,
    "delay", delay,
    "priority", priority,
  }
  local function optional(field, value)
    fields[#fields + 1] = field
    fields[#fields + 1] = value
  end
  if job.parentKey ~= nil then
    optional("parentKey", job.parentKey)
    optional("parent", job.parentJson)
  end
  if job.repeatJobKey then
    optional("rjk", job.repeatJobKey)
  end
  local dedup = opts["de"]
  if dedup and dedup["id"] then
    optional("deid", dedup["id"])
  end
  rcall("HMSET", job.key, unpack(fields))
  rcall("XADD", eventsKey, "*", "event", "added", "jobId", job.id, "name", name)
  return delay, priority
end
