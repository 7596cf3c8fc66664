--[[
  Name the state of a job (Job.getState, on Redis 6.0.6 and later).

  Input:
    KEYS[1] completed
    KEYS[2] failed
    KEYS[3] delayed
    KEYS[4] active
    KEYS[5] wait
    KEYS[6] paused (a legacy list)
    KEYS[7] waiting-children
    KEYS[8] prioritized

    ARGV[1] job id

  Output: the first state holding the job, in the order below, else
  "unknown". Lists are searched with LPOS.
]]
local rcall = redis.call
local id = ARGV[1]

local order = {
  {KEYS[1], "ZSCORE", "completed"},
  {KEYS[2], "ZSCORE", "failed"},
  {KEYS[3], "ZSCORE", "delayed"},
  {KEYS[8], "ZSCORE", "prioritized"},
  {KEYS[4], "LPOS", "active"},
  {KEYS[5], "LPOS", "waiting"},
  {KEYS[6], "LPOS", "waiting"},
  {KEYS[7], "ZSCORE", "waiting-children"},
}
for _, check in ipairs(order) do
  if rcall(check[2], check[1], id) then
    return check[3]
  end
end
return "unknown"
