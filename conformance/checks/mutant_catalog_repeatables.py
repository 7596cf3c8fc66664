"""The legacy repeatable jobs' mutant catalog (5.x): the scripts 6.0.0 removed, so it runs at a
5.x protocol, on our `lua/` (addRepeatableJob-2.lua, updateRepeatableJobMillis-1.lua,
removeRepeatable-3.lua and the includes `removeUnparentedJob` and `removeDelayedIteration`)
and on a 5.x release's own scripts, inlined as PyPI bullmq ships them (2.26.0: npm 5.81.5's
scripts; CI fetches it with ci/fetch-releases.sh).
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

REPEATABLE_MUTANTS: tuple[Mutant, ...] = (
    mutant("repeat-hash-not-written", "addRepeatableJob scores the key but writes no "
           "repeat:<key> hash",
           [dropped('rcall("HSET", repeatKey .. ":" .. stored, unpack(fields))\n')],
           [('  rcall("HMSET", repeatKey .. ":" .. customKey, "name", opts[\'name\'],\n'
             '    unpack(optionalValues))', "")]),
    mutant("legacy-key-not-kept", "addRepeatableJob stores the md5 key even where the queue "
           "holds the concatenated one",
           [('if rcall("ZSCORE", repeatKey, concatKey) then', "if false then")],
           [('if rcall("ZSCORE", repeatKey, legacyCustomKey) ~= false then\n'
             '  return storeRepeatableJob', "if false then\n  return storeRepeatableJob")]),
    mutant("previous-iteration-kept", "re-adding a repeatable job leaves its delayed "
           "iteration of the previous fire time",
           [('  if rcall("ZSCORE", delayedKey, jobId)\n', "  if false\n")],
           [('  if rcall("ZSCORE", delayedKey, delayedJobId)\n', "  if false\n")]),
    mutant("next-iteration-check-dropped", "re-adding at the same fire time removes the "
           "iteration that is the next one",
           [('      and rcall("EXISTS", base .. "repeat:" .. key .. ":" .. fireAt) == 0 then',
             "      then")],
           [('   and rcall("EXISTS", nextDelayedJobId) ~= 1 then', "   then")]),
    mutant("removed-repeatable-rescored", "updateRepeatableJobMillis adds back a key the "
           "queue no longer holds",
           [('end\nreturn ""\n', 'end\nrcall("ZADD", KEYS[1], ARGV[1], ARGV[2])\n'
             'return ARGV[2]\n')],
           [("end\nreturn ''", "end\nrcall(\"ZADD\", KEYS[1], ARGV[1], customKey)\n"
             "return customKey")]),
    mutant("update-prefers-legacy-key", "updateRepeatableJobMillis rescores the concatenated "
           "key before the md5 one",
           [("for i = 2, 3 do", "for i = 3, 2, -1 do")],
           [('if rcall("ZSCORE", repeatKey, customKey) then',
             'if rcall("ZSCORE", repeatKey, legacyCustomKey) then\n'
             '    rcall("ZADD", repeatKey, nextMillis, legacyCustomKey)\n'
             '    return legacyCustomKey\n'
             'elseif rcall("ZSCORE", repeatKey, customKey) then')]),
    mutant("md5-key-not-removed", "removeRepeatable knows only the concatenated key, as "
           "before 5.10.0",
           [('if rcall("ZREM", repeatKey, ARGV[3]) == 1 then', "if false then")],
           [('if(rcall("ZREM", KEYS[1], ARGV[3]) == 1) then', "if(false) then")]),
    mutant("repeat-hash-left-on-removal", "removeRepeatable removes the md5 key but leaves "
           "its hash",
           [dropped('  rcall("DEL", repeatKey .. ":" .. ARGV[3])\n')],
           [dropped('  rcall("DEL", KEYS[1] .. ":" .. ARGV[3])\n')]),
    mutant("repeatable-removal-without-event", "removing a repeatable job's delayed "
           "iteration emits no removed event",
           [dropped('      rcall("XADD", eventsKey, "*", "event", "removed", "jobId", jobId, '
                    '"prev",\n        "delayed")\n')],
           [dropped('    rcall("XADD", KEYS[3], "*", "event", "removed", "jobId", repeatJobId, '
                    '"prev", "delayed")\n')]),
    mutant("replaced-iteration-keys-left", "a replaced iteration leaves delayed but its hash, "
           "logs and deduplication key stay",
           [dropped("  releaseDedupKeyOfRemovedJob(base, jobKey, jobId)\n"
                    "  removeJobKeys(jobKey)\n")],
           [dropped("    removeJob(delayedJobId, true, prefixKey, true --[[remove debounce "
                    "key]])\n")]),
)
