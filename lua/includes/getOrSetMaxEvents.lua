--[[
  The events stream cap (meta field opts.maxLenEvents). Writes the default
  10000 the first time a script needs it.
  Needs: rcall.
]]
local function getOrSetMaxEvents(metaKey)
  local cap = rcall("HGET", metaKey, "opts.maxLenEvents")
  if cap then
    return cap
  end
  rcall("HSET", metaKey, "opts.maxLenEvents", 10000)
  return 10000
end
