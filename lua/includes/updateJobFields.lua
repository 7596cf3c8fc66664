--[[
  Apply a caller's field updates to a job hash. The argument is a msgpack
  array flattened as field, value, field, value, ...; an empty string (or
  a missing argument) means there is nothing to update. All pairs go out
  in one HMSET.
  Needs: rcall.
]]
local function updateJobFields(jobKey, packedFields)
  if packedFields == nil or #packedFields == 0 then
    return
  end
  local flat = cmsgpack.unpack(packedFields)
  if flat then
    rcall("HMSET", jobKey, unpack(flat))
  end
end
