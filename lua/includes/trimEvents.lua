--[[
  Cap the events stream before a script writes its own events, so those
  events are never the ones trimmed: XTRIM MAXLEN ~ opts.maxLenEvents
  (the default 10000 is written to meta when missing). Scripts that trim
  up front then XADD without MAXLEN.
  Needs: rcall.
]]
--- @include "getOrSetMaxEvents"

local function trimEvents(metaKey, eventsKey)
  rcall("XTRIM", eventsKey, "MAXLEN", "~", getOrSetMaxEvents(metaKey))
end
