--[[
  Run a variadic command (SADD, ZREM, LPUSH, ...) on one key over a list
  that may be too long for a single unpack: chunks of at most 7000 items,
  in list order. An empty list sends nothing.
  Needs: rcall.
]]
local function callInBatches(command, key, items)
  local total = #items
  for first = 1, total, 7000 do
    local last = math.min(first + 6999, total)
    rcall(command, key, unpack(items, first, last))
  end
end
