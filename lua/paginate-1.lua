--[[
  A page of a set or a hash (Job.getDependencies: a parent's dependencies
  set, its processed hash).

  Input:
    KEYS[1] the set or hash

    ARGV[1] page start
    ARGV[2] page end, -1 for the last item
    ARGV[3] scan cursor
    ARGV[4] offset: the items scanned before this call
    ARGV[5] the most scans
    ARGV[6] present to read each item's job hash (the item is a job's key)

  Output: {cursor, offset, items, count, jobs}; a hash's items are
  {field, value}. Items are scanned 100 at a time (SSCAN or HSCAN); each
  scanned item moves the offset on, and those whose offset falls in
  [start, start + end - start + 1) are the page (with end -1 read as the
  count). A missing key answers {0, 0, {}, 0}.
]]
local rcall = redis.call

local key = KEYS[1]
local kind = rcall("TYPE", key)["ok"]
if kind == "none" then
  return {0, 0, {}, 0}
end
local scan, count
if kind == "set" then
  scan, count = "SSCAN", rcall("SCARD", key)
elseif kind == "hash" then
  scan, count = "HSCAN", rcall("HLEN", key)
else
  return redis.error_reply("Pagination is only supported for sets and hashes.")
end

local pageStart = tonumber(ARGV[1])
local pageEnd = tonumber(ARGV[2])
if pageEnd == -1 then
  pageEnd = count
end
-- One past the page, as an offset.
local stop = pageStart + (pageEnd - pageStart + 1)
local cursor = ARGV[3]
local offset = tonumber(ARGV[4])
local maxScans = tonumber(ARGV[5])
local withJobs = ARGV[6] ~= nil
local width = 1
if scan == "HSCAN" then
  width = 2
end

local items, jobs = {}, {}
local scans = 0
repeat
  local reply = rcall(scan, key, cursor, "COUNT", 100)
  cursor = reply[1]
  local chunk = reply[2]
  local size = #chunk / width
  if size == 0 then
    break
  end
  if offset + size < pageStart then
    offset = offset + size  -- the whole chunk is before the page
  elseif offset > stop then
    break                   -- the chunk is after the page
  else
    for i = 1, #chunk, width do
      if offset >= stop then
        return {cursor, offset, items, count, jobs}
      end
      if offset >= pageStart then
        if width == 2 then
          items[#items + 1] = {chunk[i], chunk[i + 1]}
        else
          items[#items + 1] = chunk[i]
        end
        if withJobs then
          jobs[#jobs + 1] = rcall("HGETALL", chunk[i])
        end
      end
      offset = offset + 1
    end
  end
  scans = scans + 1
until cursor == "0" or scans >= maxScans
return {cursor, offset, items, count, jobs}
