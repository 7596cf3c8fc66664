--[[
  The index of an ascending window's edge counted from a list's tail (the
  list's head is its newest job): -(index + 1), with -1 ("to the end") read
  as 0, the head.
]]
local function fromTail(index)
  if index == -1 then
    return 0
  end
  return -(index + 1)
end
