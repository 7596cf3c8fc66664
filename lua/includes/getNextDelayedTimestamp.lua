--[[
  Earliest delayed fire time, recovered from the lowest delayed score.
  Plain division by 0x1000 with no floor: a bumped head (F*0x1000 + k)
  gives a fractional millisecond. Returns nil when nothing is delayed.
  Needs: rcall.
]]
local function getNextDelayedTimestamp(delayedKey)
  local head = rcall("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  local headScore = tonumber(head[2])
  if headScore == nil then
    return nil
  end
  return headScore / 0x1000
end
