--[[
  Whether a list holds an item, read with LRANGE (no LPOS before Redis
  6.0.6). Returns 1, or nil.
]]
local function listHolds(listKey, item)
  for _, value in ipairs(rcall("LRANGE", listKey, 0, -1)) do
    if value == item then
      return 1
    end
  end
  return nil
end
