--[[
  A 5.x marker ("0:<ms>") left as the last item of wait or paused: popped
  when the list holds jobs too, so that readers neither count nor list it.

  Returns how many items the list holds after (0 for a marker alone, which
  stays), or nil when its last item is no marker.
]]
local function dropLegacyMarker(listKey)
  local last = rcall("LINDEX", listKey, -1)
  if not last or string.sub(last, 1, 2) ~= "0:" then
    return nil
  end
  local length = rcall("LLEN", listKey)
  if length == 1 then
    return 0
  end
  rcall("RPOP", listKey)
  return length - 1
end
