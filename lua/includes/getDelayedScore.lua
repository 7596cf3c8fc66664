--[[
  Delayed score with the same-millisecond band bump (BullMQ >= 5.8.6).

  The fire time F is timestamp + delay only when delay > 0; a zero or
  negative delay leaves F = timestamp. Each F owns the band
  [F*0x1000, (F+1)*0x1000 - 1]. The first job of a band takes the floor,
  later ones take the band's current top + 1, and once the top reaches
  the ceiling every further job shares the ceiling (saturation).

  Returns the score and F (F is what the 'delayed' event reports).
  Needs: rcall.
]]
local function getDelayedScore(delayedKey, timestamp, delay)
  local fireAt = tonumber(timestamp)
  if delay > 0 then
    fireAt = fireAt + delay
  end
  local bandFloor = fireAt * 0x1000
  local bandCeiling = (fireAt + 1) * 0x1000 - 1
  local top = rcall("ZREVRANGEBYSCORE", delayedKey, bandCeiling, bandFloor,
    "WITHSCORES", "LIMIT", 0, 1)
  local topScore = tonumber(top[2])
  if topScore == nil then
    return bandFloor, fireAt
  end
  if topScore >= bandCeiling then
    return bandCeiling, fireAt
  end
  return topScore + 1, fireAt
end
