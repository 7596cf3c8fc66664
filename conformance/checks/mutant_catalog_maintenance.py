"""The maintenance calls' part of the mutant catalog: drain, clean, obliterate, the bulk
moves to wait, reprocessJob, saveStacktrace and removeOrphanedJobs, each made to remove, keep
or place a job wrong.

Our `lua/` keeps the hard removal in the include `removeJobHard` (and `removeJobsAtHead`), and
a retried child's return to its parent in `moveChildBackToParent`; the official scripts (the
pinned PyPI release's, flattened) inline `removeParentDependencyKey`, whose `hard` branch every
script with the include carries (only drain, clean and obliterate take it).
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

MAINTENANCE_MUTANTS: tuple[Mutant, ...] = (
    mutant("drain-delayed-always", "drain removes delayed jobs without being asked",
           [('if ARGV[2] == "1" then\n  removeZsetHead(KEYS[3]',
             'if true then\n  removeZsetHead(KEYS[3]')],
           [('if ARGV[2] == "1" then\n  removeZSetJobs(KEYS[3]',
             'if true then\n  removeZSetJobs(KEYS[3]')]),
    mutant("drain-scheduler-removed", "drain removes a job scheduler's current iteration",
           [dropped('  spared["repeat:" .. schedulers[i] .. ":" .. schedulers[i + 1]] = true\n')],
           [dropped("    scheduledJobs[delayedJobId] = true\n")]),
    mutant("hard-removal-parent-to-wait", "a hard removal's last child moves its parent in "
           "the same queue to wait instead of removing it",
           [("  if prefix == base then", "  if false then")],
           [("if parentPrefix == baseKey then", "if false then")]),
    mutant("clean-limit-from-head", "a limited clean reads a list from its head",
           [("local first = limit > 0 and -limit or 0", "local first = 0")],
           [("if limit > 0 then\n  rangeStart = -1 - limit + 1",
             "if false then\n  rangeStart = -1 - limit + 1")]),
    mutant("clean-age-as-number", "clean compares a job's age to the timestamp as numbers, "
           "not as text",
           [("return not age or age <= timestamp",
             "return not age or tonumber(age) <= tonumber(timestamp)")],
           [("(not jobTS or jobTS <= timestamp)",
             "(not jobTS or tonumber(jobTS) <= tonumber(timestamp))")]),
    mutant("clean-locked-active", "clean takes an active job that holds its lock",
           [('(setName ~= "active" or rcall("EXISTS", jobKey .. ":lock") == 0)', "(true)")],
           [('(isWaiting or rcall("EXISTS", jobKey .. ":lock") == 0)', "(true)")]),
    mutant("clean-no-event", "clean writes no `cleaned` event",
           [dropped('rcall("XADD", KEYS[2], "*", "event", "cleaned", "count", #cleaned)\n')],
           [dropped('rcall("XADD", KEYS[2], "*", "event", "cleaned", "count", result[2])\n')]),
    mutant("obliterate-active-unforced", "obliterate removes active jobs without force",
           [('if #active > 0 and ARGV[2] == "" then', "if false then")],
           [("return -2 -- Error, ExistActiveJobs", "local _ = 0")]),
    mutant("obliterate-keeps-meta", "obliterate leaves the marker and meta keys",
           [('base .. "id", base .. "pc", base .. "marker", base .. "meta",',
             'base .. "id", base .. "pc",')],
           [dropped("    baseKey .. 'marker',\n    baseKey .. 'meta',\n")]),
    mutant("to-wait-rpush", "a bulk move to wait RPUSHes, ahead of the waiting jobs",
           [('callInBatches("LPUSH", KEYS[4], ids)', 'callInBatches("RPUSH", KEYS[4], ids)')],
           [('rcall("LPUSH", KEYS[4], unpack(jobs, from, to))',
             'rcall("RPUSH", KEYS[4], unpack(jobs, from, to))')]),
    mutant("to-wait-keeps-reason", "a bulk retry keeps the failedReason",
           [('rcall("HDEL", jobKey, "finishedOn", "processedOn", resultField)',
             'rcall("HDEL", jobKey, "finishedOn", "processedOn")')],
           [('rcall("HDEL", jobKey, "finishedOn", "processedOn", "failedReason")',
             'rcall("HDEL", jobKey, "finishedOn", "processedOn")')]),
    mutant("reprocess-ignores-priority", "reprocessJob puts a job with a priority in wait",
           [("if priority == 0 then\n  addReadyJob(KEYS[4]",
             "if true then\n  addReadyJob(KEYS[4]")],
           [("    if priority == 0 then\n      addJobInTargetList(KEYS[4]",
             "    if true then\n      addJobInTargetList(KEYS[4]")]),
    mutant("reprocess-any-state", "reprocessJob retries a job that is not in the set named",
           [dropped('if rcall("ZREM", KEYS[3], jobId) == 0 then\n  return -3\nend\n')],
           [('if (rcall("ZREM", KEYS[3], jobId) == 1) then',
             'if (rcall("ZREM", KEYS[3], jobId) >= 0) then')]),
    mutant("retried-child-not-pending", "a retried child is not pending in its parent again",
           [dropped('    rcall("SADD", parentKey .. ":dependencies", jobKey)\n')],
           [('rcall("SADD", parentKey .. ":dependencies", jobKey)', "local _ = 0")]),
    mutant("orphan-sub-keys-kept", "removeOrphanedJobs deletes the hash but not its sub-keys",
           [dropped('      keys[#keys + 1] = jobKey .. ":" .. ARGV[stateCount + 2 + s]\n')],
           [dropped("      keysToDelete[#keysToDelete + 1] = jobKey .. ':' .. suffix\n")]),
    mutant("stacktrace-without-reason", "saveStacktrace writes the stacktrace only",
           [('rcall("HSET", KEYS[1], "stacktrace", ARGV[1], "failedReason", ARGV[2])',
             'rcall("HSET", KEYS[1], "stacktrace", ARGV[1])')],
           [('rcall("HMSET", KEYS[1], "stacktrace", ARGV[1], "failedReason", ARGV[2])',
             'rcall("HMSET", KEYS[1], "stacktrace", ARGV[1])')]),
)
