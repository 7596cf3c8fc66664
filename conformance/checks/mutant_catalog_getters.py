"""The getters' part of the mutant catalog: a getter that counts, ranges or names a state
wrong, keeps a legacy marker, lists a job without its hash, or pages a parent's children
wrong.

Our `lua/` keeps the legacy marker's cleanup in the include `dropLegacyMarker` and the list
scan of the scripts for Redis before 6.0.6 in `listHolds`; the official scripts (the pinned
PyPI release's, npm 6.4.0's, flattened) inline both. Their getCounts has no delayed cutoff
(6.7.0), so no mutant here touches it.
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

_OFF_ASC_RANGE = ('    results[#results+1] = rcall("LRANGE", listKey,\n      modifiedRangeEnd,\n'
                  "      modifiedRangeStart)\n")

GETTER_MUTANTS: tuple[Mutant, ...] = (
    mutant("counts-legacy-marker-counted", "getCounts pops a legacy marker but still counts it",
           [("  return length - 1\n", "  return length\n")],
           [("        results[#results+1] = count-1\n", "        results[#results+1] = count\n")]),
    mutant("ranges-legacy-marker-kept", "getRanges lists a legacy marker as a job id",
           [("    if dropLegacyMarker(key) == 0 then", '    if rcall("LLEN", key) == 0 then')],
           [('        rcall("RPOP", stateKey)\n        getRangeInList(',
             "        getRangeInList(")]),
    mutant("ranges-asc-as-stored", "getRanges reads a list ascending as it reads it descending",
           [('    return rcall("LRANGE", key, fromTail(last), fromTail(first))\n',
             '    return rcall("LRANGE", key, first, last)\n')],
           [(_OFF_ASC_RANGE,
             '    results[#results+1] = rcall("LRANGE", listKey, rangeStart, rangeEnd)\n')]),
    mutant("ranges-set-asc-reversed", "getRanges reads a sorted set ascending from the highest "
           "score",
           [('    ranges[#ranges + 1] = rcall("ZRANGE", key, first, last)\n',
             '    ranges[#ranges + 1] = rcall("ZREVRANGE", key, first, last)\n')],
           [('      results[#results+1] = rcall("ZRANGE", stateKey, rangeStart, rangeEnd)\n',
             '      results[#results+1] = rcall("ZREVRANGE", stateKey, rangeStart, rangeEnd)\n')]),
    mutant("priority-band-ceiling-next", "getCountsPerPriority counts the next priority's "
           "lowest score as this one's",
           [("(priority + 1) * band - 1)", "(priority + 1) * band)")],
           [("(priority + 1)  * 0x100000000 - 1)", "(priority + 1)  * 0x100000000)")]),
    mutant("state-paused-list-unread", "getStateV2 never searches a legacy paused list",
           [dropped('  {KEYS[6], "LPOS", "waiting"},\n')],
           [dropped('if rcall("LPOS", KEYS[6] , ARGV[1]) then\n  return "waiting"\nend\n')]),
    mutant("state-prioritized-as-waiting", "getState names a prioritized job waiting",
           [('{KEYS[8], "ZSCORE", "prioritized"}', '{KEYS[8], "ZSCORE", "waiting"}'),
            ('if inSet(KEYS[8]) then return "prioritized" end',
             'if inSet(KEYS[8]) then return "waiting" end')],
           [('KEYS[8], ARGV[1]) then\n  return "prioritized"\n',
             'KEYS[8], ARGV[1]) then\n  return "waiting"\n')]),
    mutant("finished-reason-for-value", "isFinished answers a completed job's failedReason",
           [('{KEYS[1], 1, "returnvalue"}', '{KEYS[1], 1, "failedReason"}')],
           [('local returnValue = rcall("HGET", KEYS[3], "returnvalue")',
             'local returnValue = rcall("HGET", KEYS[3], "failedReason")')]),
    mutant("finished-missing-as-waiting", "isFinished answers 0, not -1, without the job hash",
           [('". isFinished"}\n  end\n  return -1\n', '". isFinished"}\n  end\n  return 0\n')],
           [('". isFinished"}\n  end  \n  return -1\n', '". isFinished"}\n  end  \n  return 0\n')]),
    mutant("in-list-always", "isJobInList answers 1 for an id the list does not hold",
           [("return listHolds(KEYS[1], ARGV[1])\n", "return 1\n")],
           [("return checkItemInList(items, ARGV[1])", "return 1")]),
    mutant("maxed-strictly-above", "isMaxed needs more active jobs than the concurrency",
           [('rcall("LLEN", KEYS[2]) >= tonumber(concurrency)',
             'rcall("LLEN", KEYS[2]) > tonumber(concurrency)')],
           [("if activeCount >= tonumber(maxConcurrency) then",
             "if activeCount > tonumber(maxConcurrency) then")]),
    mutant("jobs-hashless-listed", "getJobs lists an id without a job hash",
           [("      if #fields > 0 then\n", "      if true then\n")],
           [("  if #jobData > 0 then\n", "  if true then\n")]),
    mutant("jobs-asc-not-reversed", "getJobs answers an ascending list window newest first",
           [("  return oldestFirst\n", "  return window\n")],
           [("      return reversed\n", "      return ids\n")]),
    mutant("jobs-read-once", "getJobs reads a bounded window once, without backfilling "
           "skipped ids",
           [("reads < maxReads do", "reads < 1 do")],
           [("iterations < max_iterations do", "iterations < 1 do")]),
    mutant("jobs-sixth-read", "getJobs reads once more than the backfill bound",
           [("reads < maxReads do", "reads <= maxReads do")],
           [("iterations < max_iterations do", "iterations <= max_iterations do")]),
    mutant("paginate-page-short", "paginate's page holds end - start items, one short",
           [("local stop = pageStart + (pageEnd - pageStart + 1)\n",
             "local stop = pageStart + (pageEnd - pageStart)\n")],
           [("local pageSize = (endOffset - startOffset) + 1\n",
             "local pageSize = (endOffset - startOffset)\n")]),
    mutant("paginate-offset-from-zero", "paginate ignores the offset of an earlier call",
           [("local offset = tonumber(ARGV[4])\n", "local offset = 0\n")],
           [("pageSize, ARGV[3], tonumber(ARGV[4]),", "pageSize, ARGV[3], 0,")]),
    mutant("paginate-job-by-value", "paginate reads a processed child's job at its value, not "
           "its key",
           [('          jobs[#jobs + 1] = rcall("HGETALL", chunk[i])\n',
             '          jobs[#jobs + 1] = rcall("HGETALL", chunk[i + width - 1])\n')],
           [('jobs[#jobs+1] = rcall("HGETALL", members[i])',
             'jobs[#jobs+1] = rcall("HGETALL", members[i + step - 1])')]),
    mutant("metrics-fields-swapped", "getMetrics answers prevCount where prevTS belongs",
           [('"count", "prevTS", "prevCount")', '"count", "prevCount", "prevTS")')],
           [('"count", "prevTS", "prevCount")', '"count", "prevCount", "prevTS")')]),
)
