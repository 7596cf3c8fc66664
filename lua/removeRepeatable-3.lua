--[[
  Remove a legacy repeatable job (5.x).

  Input:
    KEYS[1] repeat
    KEYS[2] delayed
    KEYS[3] events stream

    ARGV[1] the iteration id prefix of a concatenated key,
            "repeat:<md5(name .. jobId .. md5(key))>:"
    ARGV[2] the concatenated key (a repeat.key with colons: that key)
    ARGV[3] the repeat key (md5 of the concatenated key, or repeat.key)
    ARGV[4] BASE ("<prefix>:<queue>:")

  Output:
    0 a key was removed
    1 the queue holds neither key

  The concatenated key is looked for first; its hash stays. Else the
  repeat key goes with its hash. Either way its iteration goes while it is
  delayed, with its keys and a 'removed' event (prev delayed, untrimmed).
]]
local rcall = redis.call
local repeatKey = KEYS[1]

--- @include "includes/removeJobKeys"
--- @include "includes/removeDelayedIteration"

removeDelayedIteration(repeatKey, KEYS[2], KEYS[3], ARGV[4], ARGV[1], ARGV[2])
if rcall("ZREM", repeatKey, ARGV[2]) == 1 then
  return 0
end
removeDelayedIteration(repeatKey, KEYS[2], KEYS[3], ARGV[4],
  "repeat:" .. ARGV[3] .. ":", ARGV[3])
if rcall("ZREM", repeatKey, ARGV[3]) == 1 then
  rcall("DEL", repeatKey .. ":" .. ARGV[3])
  return 0
end
return 1
