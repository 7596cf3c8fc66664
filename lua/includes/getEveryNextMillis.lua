--[[
  Next fire time of an "every" scheduler, and its offset in the interval.

  First iteration (prevMillis nil): the start date when given (or now if
  it is past), else, with an offset > 0, the first slot k*every + offset
  after now, else now.
  Later iteration: prevMillis + every, unless that is behind now; then
  now's slot plus the offset, or the slot after when that is not ahead.
  A nil or 0 offset is replaced by where the result falls in its interval.
  Returns two integers: nextMillis, offset.
]]
local function getEveryNextMillis(prevMillis, every, now, offset, startDate)
  offset = tonumber(offset)
  local fireAt
  if prevMillis == nil then
    if startDate then
      fireAt = tonumber(startDate)
      if fireAt < now then
        fireAt = now
      end
    elseif offset and offset > 0 then
      fireAt = math.floor(now / every) * every + offset
      if fireAt <= now then
        fireAt = fireAt + every
      end
    else
      fireAt = now
    end
  else
    fireAt = prevMillis + every
    if fireAt < now then
      local slot = math.floor(now / every) * every + (offset or 0)
      if slot <= now then
        fireAt = slot + every
      else
        fireAt = slot
      end
    end
  end
  if offset == nil or offset == 0 then
    offset = fireAt - math.floor(fireAt / every) * every
  end
  return math.floor(fireAt), math.floor(offset)
end
