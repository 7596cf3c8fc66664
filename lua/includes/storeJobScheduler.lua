--[[
  Write a scheduler: its score in the repeat zset (the next fire time),
  and its hash rewritten from scratch. The hash holds name, then only the
  options given (tz, limit, pattern, startDate, endDate, every), offset
  (the one given, else the one the hash had), the template opts (cjson,
  unless empty) and data (unless "{}"), and the iteration count ic, kept
  from the old hash (1 for a new scheduler).
  Needs: rcall.
]]
local function storeJobScheduler(repeatKey, schedulerKey, schedulerId,
                                 nextMillis, schedulerOpts, templateData,
                                 templateOpts)
  rcall("ZADD", repeatKey, nextMillis, schedulerId)
  local fields = {"name", schedulerOpts["name"]}
  local function put(field, value)
    if value ~= nil then
      fields[#fields + 1] = field
      fields[#fields + 1] = value
    end
  end
  for _, field in ipairs({"tz", "limit", "pattern", "startDate", "endDate",
                          "every"}) do
    put(field, schedulerOpts[field])
  end
  local keptOffset = rcall("HGET", schedulerKey, "offset")
  if schedulerOpts["offset"] ~= nil then
    put("offset", schedulerOpts["offset"])
  elseif keptOffset then
    put("offset", tonumber(keptOffset))
  end
  local optsJson = cjson.encode(templateOpts)
  if optsJson ~= "{}" then
    put("opts", optsJson)
  end
  if templateData ~= "{}" then
    put("data", templateData)
  end
  put("ic", rcall("HGET", schedulerKey, "ic") or 1)
  rcall("DEL", schedulerKey)
  rcall("HMSET", schedulerKey, unpack(fields))
end
