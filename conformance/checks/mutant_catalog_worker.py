"""The worker half of the mutant catalog, part 2: retrying (RESEARCH-WORKER §2.1), the stall
check (§4), the rate limiter (§5), lock renewal (§3), deduplication (§6), removal (§7) and the
job mutators (§8).

Our `lua/` keeps this logic in `retryJob-11.lua`, `moveStalledJobsToWait-9.lua`, the lock,
limiter, removal and update scripts and the includes `activateJob` and `getRateLimitTTL`; the
official scripts inline it (`prepareJobForProcessing`, `getRateLimitTTL`, `moveJobToWait`).
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

# retryJob: where a job without priority goes back, and the paused-or-maxed rule for it.
_OURS_RETRY_PUSH = ('local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0\n'
                    "local pausedOrMaxed = isQueuePausedOrMaxed(metaKey, activeKey)\n"
                    "if priority == 0 then\n"
                    "  addReadyJob(waitKey, markerKey, pushCmd, jobId, pausedOrMaxed)\n")
_OFF_RETRY_PUSH = "    addJobInTargetList(KEYS[2], markerKey, ARGV[3], isPausedOrMaxed, ARGV[4])\n"
_SWAPPED_PUSH = '{cmd} == "LPUSH" and "RPUSH" or "LPUSH"'
# The stall check's push to the front of wait.
_OURS_STALL_PUSH = ('addReadyJob(waitKey, markerKey, "RPUSH", jobId, '
                    "isQueuePausedOrMaxed(metaKey, activeKey))")
_OFF_STALL_PUSH = ("moveJobToWait(metaKey, activeKey, waitKey, pausedKey, markerKey, "
                   'eventStreamKey, jobId,\n                        "RPUSH")')

# Lock renewal: the SET and SREM of ours (one include for both scripts), extendLocks' loop, and
# the official extendLocks' SREM.
_OURS_RENEW = '  rcall("SET", lockKey, token, "PX", duration)\n  rcall("SREM", stalledKey, jobId)\n'
_OURS_RENEW_MANY = ('  if not extendJobLock(base .. jobId .. ":lock", stalledKey, tokens[i], '
                    "duration, jobId) then")
_OFF_RENEW_SREM = '                rcall("SREM", stalledKey, jobId)\n'
_OFF_FAILED = "table.insert(failedJobs, jobId)"

WORKER_MUTANTS: tuple[Mutant, ...] = (
    # --- retryJob (§2.1) ---
    mutant("retry-wrong-end", "retryJob pushes to the wrong end (LPUSH/RPUSH swapped)",
           [(_OURS_RETRY_PUSH, _OURS_RETRY_PUSH.replace(
               "pushCmd,", _SWAPPED_PUSH.format(cmd="pushCmd") + ","))],
           [(_OFF_RETRY_PUSH, _OFF_RETRY_PUSH.replace(
               "ARGV[3],", _SWAPPED_PUSH.format(cmd="ARGV[3]") + ","))]),
    mutant("retry-no-attempt", "retryJob does not count the attempt (atm)",
           [('rcall("HINCRBY", jobKey, "atm", 1)\nrcall("XADD", eventsKey, "MAXLEN", "~", '
             "getOrSetMaxEvents(metaKey)",
             'rcall("XADD", eventsKey, "MAXLEN", "~", getOrSetMaxEvents(metaKey)')],
           [('  rcall("HINCRBY", jobKey, "atm", 1)\n  local maxEvents = getOrSetMaxEvents(KEYS[5])',
             "  local maxEvents = getOrSetMaxEvents(KEYS[5])")]),
    mutant("retry-marker-while-paused", "retryJob writes marker \"0\" while paused or maxed",
           [(_OURS_RETRY_PUSH, _OURS_RETRY_PUSH.replace(
               "isQueuePausedOrMaxed(metaKey, activeKey)", "false"))],
           [("  isPausedOrMaxed = isQueuePausedOrMaxed(KEYS[5], KEYS[1])\n"
             "  -- Standard or priority add\n",
             "  isPausedOrMaxed = false\n  -- Standard or priority add\n")]),
    mutant("retry-ignores-priority", "retryJob puts a prioritized job in wait",
           [(_OURS_RETRY_PUSH, _OURS_RETRY_PUSH.replace(
               'tonumber(rcall("HGET", jobKey, "priority")) or 0', "0"))],
           [('  local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0\n'
             "  --need to re-evaluate",
             "  local priority = 0\n  --need to re-evaluate")]),
    mutant("retry-skips-sweep", "retryJob skips the delayed promotion sweep",
           [dropped("promoteDelayedJobs(delayedKey, markerKey, waitKey, prioritizedKey, "
                    "eventsKey, base, now,\n  priorityCounterKey, "
                    "isQueuePausedOrMaxed(metaKey, activeKey))\n")],
           [dropped("promoteDelayedJobs(KEYS[7], markerKey, KEYS[2], KEYS[8], KEYS[6], "
                    "ARGV[1], ARGV[2], KEYS[9], isPausedOrMaxed)\n")]),
    # --- moveStalledJobsToWait (§4) ---
    mutant("stall-check-unthrottled", "stall check ignores stalled-check (runs twice)",
           [dropped('if rcall("EXISTS", stalledCheckKey) == 1 then\n  return {}\nend\n')],
           [dropped('if rcall("EXISTS", stalledCheckKey) == 1 then\n    return {}\nend\n')]),
    mutant("stall-check-key-no-expiry", "stalled-check set without PX (one check ever)",
           [('rcall("SET", stalledCheckKey, now, "PX", checkInterval)',
             'rcall("SET", stalledCheckKey, now)')],
           [('rcall("SET", stalledCheckKey, timestamp, "PX", maxCheckTime)',
             'rcall("SET", stalledCheckKey, timestamp)')]),
    mutant("stall-recovers-locked", "stall check recovers a job whose lock still exists",
           [dropped('  if rcall("EXISTS", base .. jobId .. ":lock") == 1 then\n'
                    "    return false\n  end\n")],
           [('if (rcall("EXISTS", jobKey .. ":lock") == 0) then', "if true then")]),
    mutant("stall-pushes-back", "stall check pushes to the back of wait (LPUSH)",
           [(_OURS_STALL_PUSH, _OURS_STALL_PUSH.replace('"RPUSH"', '"LPUSH"'))],
           [(_OFF_STALL_PUSH, _OFF_STALL_PUSH.replace('"RPUSH"', '"LPUSH"'))]),
    mutant("stall-never-defers", "stall check never sets defa past maxStalledCount",
           [dropped('    rcall("HSET", jobKey, "defa", "job stalled more than allowable '
                    'limit")\n')],
           [dropped('                        rcall("HSET", jobKey, "defa", failedReason)\n')]),
    mutant("stall-limit-inclusive", "stall limit inclusive: defa at stc == maxStalledCount",
           [("if stalls > maxStalledCount and", "if stalls >= maxStalledCount and")],
           [("if stalledCount > maxStalledJobCount and",
             "if stalledCount >= maxStalledJobCount and")]),
    mutant("stall-defers-scheduler-jobs", "stall check sets defa on a live scheduler's job",
           [(" and not belongsToLiveScheduler(jobKey) then", " then")],
           [("maxStalledJobCount and not isRepeatableJob then", "maxStalledJobCount then")]),
    mutant("stall-no-stalled-event", "missing event: no 'stalled' on a stall recovery",
           [dropped('  rcall("XADD", eventsKey, "*", "event", "stalled", "jobId", jobId)\n')],
           [dropped('                    rcall("XADD", eventStreamKey, "*", "event", "stalled", '
                    '"jobId", jobId)\n')]),
    mutant("stall-forgets-marking", "stall check does not mark the active jobs",
           [dropped('callInBatches("SADD", stalledKey, rcall("LRANGE", activeKey, 0, -1))\n')],
           [dropped("        rcall('SADD', stalledKey, unpack(active, from, to))\n")]),
    # --- the rate limiter on fetch (§5) ---
    mutant("rate-limit-counts-defa", "rate limiter counts a job with a deferred failure",
           [('if maxJobs and rcall("HEXISTS", jobKey, "defa") == 0 then', "if maxJobs then")],
           [('local isDeferredFailure = rcall("HEXISTS", jobKey, "defa") == 1',
             "local isDeferredFailure = false")]),
    mutant("rate-limit-window-restarts", "limiter PEXPIRE on every hit (the window never ends)",
           [('if rcall("INCR", limiterKey) == 1 then', 'if rcall("INCR", limiterKey) >= 1 then')],
           [("      if jobCounter == 1 then\n", "      if jobCounter >= 1 then\n")]),
    mutant("rate-limit-one-late", "rate limit reached one job late (counter > max)",
           [("  if used < maxJobs then\n", "  if used <= maxJobs then\n")],
           [("if maxJobs and maxJobs <= tonumber(rcall(\"GET\", rateLimiterKey) or 0) then",
             "if maxJobs and maxJobs < tonumber(rcall(\"GET\", rateLimiterKey) or 0) then")]),
    # --- lock renewal and release (§3) ---
    mutant("extend-recreates-lock", "lock renewal re-creates a missing lock",
           [('  if token == nil or rcall("GET", lockKey) ~= token then\n',
             '  if token == nil or (rcall("GET", lockKey) or token) ~= token then\n')],
           [('if rcall("GET", KEYS[1]) == ARGV[1] then\n  --',
             'if (rcall("GET", KEYS[1]) or ARGV[1]) == ARGV[1] then\n  --'),
            ('    local currentToken = rcall("GET", lockKey)\n',
             '    local currentToken = rcall("GET", lockKey) or token\n')]),
    mutant("extend-keeps-stalled", "lock renewal leaves the id in the stalled set",
           [(_OURS_RENEW, _OURS_RENEW.split("\n", 1)[0] + "\n")],
           [dropped('    rcall("SREM", KEYS[2], ARGV[3])\n'),
            dropped(_OFF_RENEW_SREM)]),
    mutant("extend-locks-returns-renewed", "extendLocks returns the renewed ids, not the failed",
           [(_OURS_RENEW_MANY, _OURS_RENEW_MANY.replace("if not ", "if "))],
           [(_OFF_FAILED, "local _ = jobId"),
            (_OFF_RENEW_SREM, _OFF_RENEW_SREM + "                " + _OFF_FAILED + "\n")]),
    mutant("release-lock-ignores-token", "releaseLock deletes another token's lock",
           [('if rcall("GET", lockKey) == ARGV[1] then\n  return rcall("DEL", lockKey)',
             'if rcall("GET", lockKey) then\n  return rcall("DEL", lockKey)')],
           [('if rcall("GET", KEYS[1]) == ARGV[1] then\n  return rcall("DEL", KEYS[1])',
             'if rcall("GET", KEYS[1]) then\n  return rcall("DEL", KEYS[1])')]),
    # --- rate-limit push-back and TTL (§5.1, §5.2) ---
    mutant("push-back-to-back", "moveJobFromActiveToWait pushes to the back of wait (LPUSH)",
           [('    addReadyJob(waitKey, markerKey, "RPUSH", jobId, pausedOrMaxed)\n',
             '    addReadyJob(waitKey, markerKey, "LPUSH", jobId, pausedOrMaxed)\n')],
           [('addJobInTargetList(KEYS[2], KEYS[8], "RPUSH", isPausedOrMaxed, jobId)',
             'addJobInTargetList(KEYS[2], KEYS[8], "LPUSH", isPausedOrMaxed, jobId)')]),
    mutant("rate-limit-ttl-raw-below-max", "getRateLimitTtl returns the raw PTTL below max",
           [('if ARGV[1] ~= "0" then\n  return getRateLimitTTL(tonumber(ARGV[1]), limiterKey)',
             'if ARGV[1] ~= "0" then\n  return rcall("PTTL", limiterKey)')],
           [('if ARGV[1] ~= "0" then\n  return getRateLimitTTL(tonumber(ARGV[1]), '
             "rateLimiterKey)",
             'if ARGV[1] ~= "0" then\n  return rcall("PTTL", rateLimiterKey)')]),
    # --- deduplication (§6) ---
    mutant("dedup-set-without-nx", "dedup key SET without NX (a second add takes it over)",
           [('rcall("SET", windowKey, job.id, "PX", ttl, "NX")',
             'rcall("SET", windowKey, job.id, "PX", ttl)'),
            ('rcall("SET", windowKey, job.id, "NX")', 'rcall("SET", windowKey, job.id)')],
           [("rcall('SET', deduplicationKey, jobId, 'PX', ttl, 'NX')",
             "rcall('SET', deduplicationKey, jobId, 'PX', ttl)"),
            ("not rcall('SET', deduplicationKey, jobId, 'NX')",
             "not rcall('SET', deduplicationKey, jobId)")]),
    mutant("dedup-extend-no-refresh", "extend does not refresh the dedup window on a hit",
           [("    setWindowOwner(windowKey, ownerId, ttl)\n  else\n", "  else\n")],
           [("                    setDeduplicationKey(deduplicationKey, currentDeduplicatedJobId,"
             " deduplicationOpts)\n", "")]),
    mutant("dedup-hit-stores-job", "a deduplicated add still stores the new job",
           [("  logDeduplicated(eventsKey, job.maxEvents, ownerId, dedupId, job.id)\n"
             "  return ownerId\n",
             "  logDeduplicated(eventsKey, job.maxEvents, ownerId, dedupId, job.id)\n"
             "  return nil\n")],
           [('"deduplicatedJobId", jobId)\n        return currentDeduplicatedJobId\n',
             '"deduplicatedJobId", jobId)\n        return nil\n'),
            ('"deduplicatedJobId", jobId)\n                return currentDeduplicatedJobId\n',
             '"deduplicatedJobId", jobId)\n                return nil\n')]),
    mutant("dedup-event-roles-swapped", "deduplicated event on a hit names the new job as owner",
           [("  logDeduplicated(eventsKey, job.maxEvents, ownerId, dedupId, job.id)\n",
             "  logDeduplicated(eventsKey, job.maxEvents, job.id, dedupId, ownerId)\n")],
           [('currentDeduplicatedJobId, "deduplicationId", deduplicationId, "deduplicatedJobId", '
             "jobId)",
             'jobId, "deduplicationId", deduplicationId, "deduplicatedJobId", '
             "currentDeduplicatedJobId)")]),
    mutant("dedup-key-removed-for-any-owner", "removeDeduplicationKey ignores the owner id",
           [('if rcall("GET", windowKey) == ARGV[1] then', 'if rcall("GET", windowKey) then')],
           [("if currentJobId and currentJobId == jobId then\n  return rcall(\"DEL\", "
             "deduplicationKey)",
             "if currentJobId then\n  return rcall(\"DEL\", deduplicationKey)")]),
    # --- removeJob (§7) ---
    mutant("remove-job-ignores-lock", "removeJob removes a locked job",
           [dropped('if rcall("EXISTS", jobKey .. ":lock") == 1 then\n  return 0\nend\n')],
           [("if not isLocked(prefix, jobId, shouldRemoveChildren) then", "if true then")]),
    mutant("remove-job-keeps-dedup-key", "removeJob leaves the job's own dedup key",
           [('  if rcall("GET", windowKey) == jobId then\n    rcall("DEL", windowKey',
             '  if false then\n    rcall("DEL", windowKey')],
           [("    if currentJobId and currentJobId == jobId then\n"
             '      rcall("DEL", deduplicationKey)',
             '    if false then\n      rcall("DEL", deduplicationKey)')]),
    mutant("job-keys-forget-logs", "deleting a job's keys forgets :logs",
           [('jobKey .. ":logs", ', "")],
           [("jobKey .. ':logs', ", "")]),
    # --- job mutators (§8) ---
    mutant("log-keeps-one-less", "addLog trims to keepLogs-1 rows",
           [('rcall("LTRIM", logsKey, -keep, -1)', 'rcall("LTRIM", logsKey, -keep + 1, -1)')],
           [('rcall("LTRIM", KEYS[2], -keepLogs, -1)',
             'rcall("LTRIM", KEYS[2], -keepLogs + 1, -1)')]),
    mutant("progress-no-event", "missing event: no 'progress' on updateProgress",
           [dropped('rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*",\n'
                    '  "event", "progress", "jobId", jobId, "data", progress)\n')],
           [dropped('    rcall("XADD", KEYS[2], "MAXLEN", "~", maxEvents, "*", "event", '
                    '"progress",\n          "jobId", ARGV[1], "data", ARGV[2]);\n')]),
    mutant("update-data-creates-job", "updateData on a missing job creates its hash (no -1)",
           [('if rcall("EXISTS", jobKey) ~= 1 then\n  return -1\nend\n'
             'rcall("HSET", jobKey, "data", ARGV[1])',
             'rcall("HSET", jobKey, "data", ARGV[1])')],
           [('if rcall("EXISTS",KEYS[1]) == 1 then -- // Make sure job exists\n'
             '  rcall("HSET", KEYS[1], "data", ARGV[1])',
             'if true then\n  rcall("HSET", KEYS[1], "data", ARGV[1])')]),
)
