"""The worker half of the mutant catalog, part 1: finishing a job (RESEARCH-WORKER §1) and the
lock check every script that takes a job out of active runs (§0.1).

Our `lua/` keeps this logic in `moveToFinished-14.lua` and the includes `trimFinishedJobs`,
`recordFinishedMetrics`, `releaseDeduplicationOnFinish` and `removeLock`; the official scripts
inline it (`removeJobsByMaxAge`, `removeJobsByMaxCount`, `collectMetrics`,
`removeDeduplicationKeyIfNeededOnFinalization`, `removeLock`). A lock-check mutant therefore
breaks moveToFinished, retryJob, moveToDelayed and moveJobFromActiveToWait alike, as a port's
shared helper would.
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

# Our moveToFinished's fetch-next call and the official one.
_OURS_FETCH_NEXT = 'if ARGV[6] == "1" then\n  local fetched = takeNextJob('
_OFF_FETCH_NEXT = '    if (ARGV[6] == "1") then\n        local result = fetchNextJob('
# The drained check that follows it.
_OURS_DRAINED = ('if rcall("LLEN", waitKey) == 0 and rcall("LLEN", activeKey) == 0\n'
                 '    and rcall("ZCARD", prioritizedKey) == 0 then\n')
_OFF_DRAINED = '    local waitLen = rcall("LLEN", KEYS[1])\n'
# Age trim: the expired jobs, newest first, at most `limit`.
_OURS_AGE = 'rcall("ZREVRANGEBYSCORE", setKey, cutoff, "-inf", "LIMIT", 0, limit)'
_OFF_AGE = 'rcall("ZREVRANGEBYSCORE", targetSet, start, "-inf", "LIMIT", 0, maxLimit)'
_OFF_AGE_REM = 'rcall("ZREMRANGEBYSCORE", targetSet, "-inf", start)'
# Count trim: everything past the `keep` highest scores.
_OURS_SURPLUS = 'rcall("ZREVRANGE", setKey, keep, -1)'
_OURS_CUT = 'rcall("ZREMRANGEBYRANK", setKey, 0, -(keep + 1))'
_OFF_SURPLUS = 'rcall("ZREVRANGE", targetSet, start, -1)'
_OFF_CUT = 'rcall("ZREMRANGEBYRANK", targetSet, 0, -(maxCount + 1))'
# Turning the delayed sweep off for the rest of the script (a local function, so the fetch's
# upvalue changes too).
_NO_SWEEP = "promoteDelayedJobs = function() end\n"
# The lock release: DEL the lock, then SREM stalled.
_OURS_RELEASE = '    rcall("DEL", lockKey)\n    rcall("SREM", stalledKey, jobId)\n'
_OFF_RELEASE = '      rcall("DEL", lockKey)\n      rcall("SREM", stalledKey, jobId)\n'
_EMIT_DRAINED = 'rcall("XADD", {key}, "*", "event", "drained")'

FINISH_MUTANTS: tuple[Mutant, ...] = (
    # --- retention (§1.2) ---
    mutant("retention-count-plus-one", "count retention keeps count+1 jobs",
           [("    trimFinishedByCount(finishedKey, base, keepCount)\n",
             "    trimFinishedByCount(finishedKey, base, keepCount + 1)\n")],
           [("            removeJobsByMaxCount(maxCount, targetSet, prefix)\n",
             "            removeJobsByMaxCount(maxCount + 1, targetSet, prefix)\n")]),
    mutant("retention-count-drops-newest", "count retention removes the newest, not the oldest",
           [(_OURS_SURPLUS, _OURS_SURPLUS.replace("ZREVRANGE", "ZRANGE")),
            (_OURS_CUT, 'rcall("ZREMRANGEBYRANK", setKey, keep, -1)')],
           [(_OFF_SURPLUS, _OFF_SURPLUS.replace("ZREVRANGE", "ZRANGE")),
            (_OFF_CUT, 'rcall("ZREMRANGEBYRANK", targetSet, maxCount, -1)')]),
    mutant("retention-count-0-keeps-job", "keepJobs count 0 keeps the job instead of deleting it",
           [("if keepCount == 0 then\n  removeJobKeys(jobKey)\n",
             "if false then\n  removeJobKeys(jobKey)\n")],
           [("    if maxCount ~= 0 then\n        local targetSet = KEYS[11]\n",
             "    if true then\n        local targetSet = KEYS[11]\n")]),
    mutant("retention-age-exclusive", "age cutoff exclusive: a job at exactly now-age stays",
           [(_OURS_AGE, _OURS_AGE.replace("cutoff,", '"(" .. cutoff,'))],
           [(_OFF_AGE, _OFF_AGE.replace("start,", '"(" .. start,')),
            (_OFF_AGE_REM, _OFF_AGE_REM.replace("start)", '"(" .. start)'))]),
    mutant("retention-age-oldest-first", "age trim with a limit removes the oldest expired first",
           [(_OURS_AGE, 'rcall("ZRANGEBYSCORE", setKey, "-inf", cutoff, "LIMIT", 0, limit)')],
           [(_OFF_AGE,
             'rcall("ZRANGEBYSCORE", targetSet, "-inf", start, "LIMIT", 0, maxLimit)')]),
    # --- the finished job (§1.1) ---
    mutant("finish-not-active-succeeds", "finishing a job not in active succeeds (no -3)",
           [('local ageTrimLimit = keepJobs["limit"] or 1000\n\n'
             'if rcall("LREM", activeKey, -1, jobId) < 1 then\n  return -3\nend\n',
             'local ageTrimLimit = keepJobs["limit"] or 1000\n\n'
             'rcall("LREM", activeKey, -1, jobId)\n')],
           [('    local numRemovedElements = rcall("LREM", KEYS[2], -1, jobId)\n'
             '    if (numRemovedElements < 1) then\n        return -3\n    end\n',
             '    rcall("LREM", KEYS[2], -1, jobId)\n')]),
    mutant("finish-no-finished-on", "finished job without its finishedOn field",
           [('rcall("HSET", jobKey, outcomeField, outcome, "finishedOn", now)',
             'rcall("HSET", jobKey, outcomeField, outcome)')],
           [('rcall("HSET", jobIdKey, ARGV[3], ARGV[4], "finishedOn", timestamp)',
             'rcall("HSET", jobIdKey, ARGV[3], ARGV[4])')]),
    mutant("finish-no-attempt", "moveToFinished does not count the attempt (atm)",
           [('local attemptsMade = rcall("HINCRBY", jobKey, "atm", 1)',
             'local attemptsMade = tonumber(rcall("HGET", jobKey, "atm") or 0)')],
           [('local attemptsMade = rcall("HINCRBY", jobIdKey, "atm", 1)',
             'local attemptsMade = tonumber(rcall("HGET", jobIdKey, "atm") or 0)')]),
    mutant("fail-keeps-defa", "a final failure keeps the deferred failure (defa)",
           [dropped('  if failing then\n    rcall("HDEL", jobKey, "defa")\n  end\n')],
           [dropped('        if ARGV[5] == "failed" then\n'
                    '            rcall("HDEL", jobIdKey, "defa")\n        end\n')]),
    mutant("retries-exhausted-strict", "retries-exhausted compares atm > attempts, not >=",
           [("attemptsMade >= tonumber(opts[\"attempts\"])",
             "attemptsMade > tonumber(opts[\"attempts\"])")],
           [("if tonumber(attemptsMade) >= tonumber(attempts) then",
             "if tonumber(attemptsMade) > tonumber(attempts) then")]),
    mutant("finish-dedup-released-during-ttl", "dedup key with a running TTL released on finish",
           [('  elseif ttl == -1 and rcall("GET", dedupKey) == jobId then\n',
             '  elseif rcall("GET", dedupKey) == jobId then\n')],
           [("    if pttl == -1 then\n      local currentJobId = rcall('GET', deduplicationKey)\n",
             "    if true then\n      local currentJobId = rcall('GET', deduplicationKey)\n")]),
    # --- metrics (§1.3) ---
    mutant("metrics-delta-plus-one", "metrics data point counts the triggering job (delta + 1)",
           [("  local points = {countBefore - lastCount}\n",
             "  local points = {countBefore + 1 - lastCount}\n")],
           [('local delta = count - rcall("HGET", metaKey, "prevCount")',
             'local delta = count + 1 - rcall("HGET", metaKey, "prevCount")')]),
    mutant("metrics-prev-ts-stale", "metrics prevTS not moved on with a data point",
           [('rcall("HSET", metricsKey, "prevCount", countBefore, "prevTS", now)',
             'rcall("HSET", metricsKey, "prevCount", countBefore)')],
           [('rcall("HSET", metaKey, "prevCount", count, "prevTS", timestamp)',
             'rcall("HSET", metaKey, "prevCount", count)')]),
    # --- fetch-next and drained (§0.3) ---
    mutant("fetch-next-skips-sweep", "fetch-next skips the delayed promotion sweep",
           [(_OURS_FETCH_NEXT, _OURS_FETCH_NEXT.replace("then\n", "then\n  " + _NO_SWEEP))],
           [(_OFF_FETCH_NEXT, _OFF_FETCH_NEXT.replace("then\n", "then\n        " + _NO_SWEEP))]),
    mutant("drained-before-fetch-next", "drained checked before fetch-next (it fetches a job)",
           [(_OURS_DRAINED, "if false then\n"),
            (_OURS_FETCH_NEXT, _OURS_DRAINED + "  " + _EMIT_DRAINED.format(key="eventsKey")
             + "\nend\n" + _OURS_FETCH_NEXT)],
           [(_OFF_DRAINED, "    local waitLen = 1\n"),
            (_OFF_FETCH_NEXT, "    if rcall(\"LLEN\", KEYS[1]) + rcall(\"LLEN\", KEYS[2]) + "
             "rcall(\"ZCARD\", KEYS[3]) == 0 then\n        "
             + _EMIT_DRAINED.format(key="eventStreamKey") + "\n    end\n" + _OFF_FETCH_NEXT)]),
    mutant("drained-ignores-prioritized", "drained emitted while prioritized jobs wait",
           [(_OURS_DRAINED, 'if rcall("LLEN", waitKey) == 0 and rcall("LLEN", activeKey) == 0 '
             "then\n")],
           [('            local prioritizedLen = rcall("ZCARD", KEYS[3])\n',
             "            local prioritizedLen = 0\n")]),
    # --- the lock check (§0.1), shared by every script that takes a job out of active ---
    mutant("lock-ignores-token", "lock check accepts any token",
           [("  if holder == token then\n", "  if holder then\n")],
           [("    if lockToken == token then\n", "    if lockToken then\n")]),
    mutant("lock-mismatch-as-missing", "lock mismatch returns -2 instead of -6",
           [("  if holder then\n    return -6\n", "  if holder then\n    return -2\n")],
           [("        -- Lock exists but token does not match\n        return -6\n",
             "        return -2\n")]),
    mutant("lock-key-kept", "a job leaving active keeps its lock key",
           [(_OURS_RELEASE, _OURS_RELEASE.split("\n", 1)[1])],
           [(_OFF_RELEASE, _OFF_RELEASE.split("\n", 1)[1])]),
    mutant("token-0-deletes-lock", "token \"0\" (no check) still deletes the lock key",
           [('  if token == "0" then\n    return 0\n',
             '  if token == "0" then\n    rcall("DEL", jobKey .. ":lock")\n    return 0\n')],
           [("local function removeLock(jobKey, stalledKey, token, jobId)\n"
             "  if token ~= \"0\" then\n",
             "local function removeLock(jobKey, stalledKey, token, jobId)\n"
             "  if token == \"0\" then rcall(\"DEL\", jobKey .. ':lock') end\n"
             "  if token ~= \"0\" then\n")]),
)
