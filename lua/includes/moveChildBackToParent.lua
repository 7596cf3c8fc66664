--[[
  A finished child being retried is pending in its parent again: it leaves
  the parent's :processed (prevState "completed"), or :unsuccessful or
  :failed (prevState "failed"), and joins :dependencies when it was there.
  The parent stays where it is, even out of waiting-children.
  Needs: rcall.
]]
local function moveChildBackToParent(jobKey, prevState)
  local parentKey = rcall("HGET", jobKey, "parentKey")
  if not parentKey or rcall("EXISTS", parentKey) ~= 1 then
    return
  end
  local back
  if prevState == "failed" then
    back = rcall("ZREM", parentKey .. ":unsuccessful", jobKey) == 1
      or rcall("HDEL", parentKey .. ":failed", jobKey) == 1
  else
    back = rcall("HDEL", parentKey .. ":processed", jobKey) == 1
  end
  if back then
    rcall("SADD", parentKey .. ":dependencies", jobKey)
  end
end
