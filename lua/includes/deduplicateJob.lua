--[[
  Deduplication on add (RESEARCH-WORKER §6.1). Runs after the custom-id
  duplicate check (which wins) and before the job is stored.

  deduplicateJob(job, base, windowKey, dedupOpts, delayedKey, eventsKey)
    job        the context from beginJobAdd (id, maxEvents)
    windowKey  packed arg [9], BASE .. "de:" .. id; the STRING holds the
               id of the job that owns the window (the "owner")
    dedupOpts  opts.de = {id, ttl?, extend?, replace?}; nothing happens
               without an id
  Returns the owner's id when the add is swallowed (nothing is stored,
  K(id) was still incremented), or nil when the new job is to be added
  (it may now own the window).

  Without replace:
    - the window is claimed with SET NX (PX ttl when ttl > 0);
    - extend with ttl > 0: no NX; an existing window is re-SET to its
      owner with a fresh PX ttl, an absent one is claimed;
    - a claimed window: nil. Otherwise a trimmed 'deduplicated jobId
      <owner> deduplicationId <id> deduplicatedJobId <new>' event and the
      owner's id.
  With replace:
    - no window: claimed (PX ttl when ttl > 0), nil;
    - the owner sits in delayed: it is removed with its keys (untrimmed
      'removed ... prev delayed'), a trimmed 'deduplicated' event names
      the new job first and the replaced one second, dn:<id> is dropped,
      and the new job owns the window: KEEPTTL when ttl > 0 and no
      extend, else SET (PX ttl when ttl > 0); nil;
    - the owner is anywhere else: its id, with no event and no re-SET.
  Stale window (both modes, whenever the owner would win): a window with
  no TTL whose owner hash is gone is taken over by the new job (SET,
  PX ttl when ttl > 0; dn:<id> dropped), which is then added normally,
  without an event. A window with a TTL deduplicates even to a dead
  owner.

  Not implemented: keepLastIfActive (the dn:<id> next-job hash and the
  PERSIST of the window) is treated as absent.
  Needs: rcall.
]]
--- @include "removeJobKeys"

local function windowTtl(dedupOpts)
  local ttl = tonumber(dedupOpts["ttl"])
  if ttl and ttl > 0 then
    return ttl
  end
  return nil
end

local function setWindowOwner(windowKey, ownerId, ttl)
  if ttl then
    rcall("SET", windowKey, ownerId, "PX", ttl)
  else
    rcall("SET", windowKey, ownerId)
  end
end

-- A window without expiry should have been released when its owner
-- finished; with the owner's hash gone it is left over, and a new window
-- starts with the incoming job.
local function takeOverStaleWindow(windowKey, ownerId, newId, base, dedupId, ttl)
  if rcall("PTTL", windowKey) ~= -1 or rcall("EXISTS", base .. ownerId) == 1 then
    return false
  end
  rcall("DEL", base .. "dn:" .. dedupId)
  setWindowOwner(windowKey, newId, ttl)
  return true
end

local function logDeduplicated(eventsKey, maxEvents, keptId, dedupId, otherId)
  rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", "deduplicated",
    "jobId", keptId, "deduplicationId", dedupId, "deduplicatedJobId", otherId)
end

local function replaceDelayedOwner(job, base, windowKey, dedupId, ttl, extend,
                                   delayedKey, eventsKey)
  local ownerId = rcall("GET", windowKey)
  if not ownerId then
    setWindowOwner(windowKey, job.id, ttl)
    return nil
  end
  if rcall("ZREM", delayedKey, ownerId) == 0 then
    if takeOverStaleWindow(windowKey, ownerId, job.id, base, dedupId, ttl) then
      return nil
    end
    return ownerId
  end
  removeJobKeys(base .. ownerId)
  rcall("XADD", eventsKey, "*", "event", "removed", "jobId", ownerId, "prev", "delayed")
  logDeduplicated(eventsKey, job.maxEvents, job.id, dedupId, ownerId)
  rcall("DEL", base .. "dn:" .. dedupId)
  if ttl and not extend then
    rcall("SET", windowKey, job.id, "KEEPTTL")
  else
    setWindowOwner(windowKey, job.id, ttl)
  end
  return nil
end

local function deduplicateJob(job, base, windowKey, dedupOpts, delayedKey, eventsKey)
  local dedupId = dedupOpts and dedupOpts["id"]
  if not dedupId then
    return nil
  end
  local ttl = windowTtl(dedupOpts)
  if dedupOpts["replace"] then
    return replaceDelayedOwner(job, base, windowKey, dedupId, ttl, dedupOpts["extend"],
      delayedKey, eventsKey)
  end

  local ownerId
  if ttl and dedupOpts["extend"] then
    ownerId = rcall("GET", windowKey)
    if not ownerId then
      setWindowOwner(windowKey, job.id, ttl)
      return nil
    end
    if takeOverStaleWindow(windowKey, ownerId, job.id, base, dedupId, ttl) then
      return nil
    end
    setWindowOwner(windowKey, ownerId, ttl)
  else
    local claimed
    if ttl then
      claimed = rcall("SET", windowKey, job.id, "PX", ttl, "NX")
    else
      claimed = rcall("SET", windowKey, job.id, "NX")
    end
    if claimed then
      return nil
    end
    ownerId = rcall("GET", windowKey)
    if takeOverStaleWindow(windowKey, ownerId, job.id, base, dedupId, ttl) then
      return nil
    end
  end
  logDeduplicated(eventsKey, job.maxEvents, ownerId, dedupId, job.id)
  return ownerId
end
