"""The job schedulers' part of the mutant catalog: fire times, the scheduler hash, the upsert's
replacement of an iteration, id collisions, the worker's next iteration, and removal.

Our `lua/` keeps this logic in the includes `getEveryNextMillis`, `storeJobScheduler`,
`addSchedulerIteration` and `storeJob`, and in `addJobScheduler-11.lua`,
`updateJobScheduler-12.lua` and `removeJobScheduler-3.lua`; the official scripts inline it
(`getJobSchedulerEveryNextMillis` in both the add and the update script, `storeJobScheduler`,
`removeJobFromScheduler`, `storeJob`).
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

_OFF_DUPLICATED = ('            rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", '
                   '"duplicated", "jobId", nextDelayedJobId)\n')
_OURS_DUPLICATED = ('  rcall("XADD", q.events, "MAXLEN", "~", maxEvents, "*", "event", '
                    '"duplicated",\n    "jobId", jobId)\n')

SCHEDULER_MUTANTS: tuple[Mutant, ...] = (
    # --- fire times ---
    mutant("every-first-a-period-late", "an every scheduler's first iteration fires every ms "
           "after now, not now",
           [("    else\n      fireAt = now\n    end",
             "    else\n      fireAt = now + every\n    end")],
           [("            else\n                nextMillis = now\n            end",
             "            else\n                nextMillis = now + every\n            end")]),
    mutant("offset-never-derived", "a missing offset is stored as 0, not as where the fire time "
           "falls in its interval",
           [("  if offset == nil or offset == 0 then", "  if false then")],
           [("    if not offset or offset == 0 then", "    if false then")]),
    mutant("start-date-ignored", "the start date is ignored: the first iteration fires now",
           [("    if startDate then\n      fireAt = tonumber(startDate)",
             "    if false then\n      fireAt = tonumber(startDate)")],
           [("        if startDate then", "        if false then")]),
    mutant("offset-slot-inclusive", "an offset slot equal to now fires now, not an interval "
           "later", [("      if fireAt <= now then", "      if fireAt < now then")],
           [("                if nextMillis <= now then",
             "                if nextMillis < now then")]),
    mutant("missed-iterations-not-skipped", "after missed iterations the next fires at the "
           "previous + every, in the past",
           [("    if fireAt < now then\n      local slot", "    if false then\n      local slot")],
           [("        if nextMillis < now then\n            -- Use the same",
             "        if false then\n            -- Use the same")]),
    # --- the scheduler hash ---
    mutant("iteration-count-reset", "an upsert resets the iteration count ic to 1",
           [('  put("ic", rcall("HGET", schedulerKey, "ic") or 1)', '  put("ic", 1)')],
           [('  table.insert(optionalValues, rcall("HGET", schedulerKey, "ic") or 1)',
             "  table.insert(optionalValues, 1)")]),
    mutant("stored-offset-forgotten", "an upsert without an offset drops the stored one",
           [dropped('  elseif keptOffset then\n    put("offset", tonumber(keptOffset))\n')],
           [('    if offset then\n      table.insert(optionalValues, "offset")\n'
             '      table.insert(optionalValues, tonumber(offset))',
             '    if false then\n      table.insert(optionalValues, "offset")\n'
             '      table.insert(optionalValues, tonumber(offset))')]),
    mutant("scheduler-hash-merged", "an upsert writes over the scheduler hash without "
           "deleting it: options of an earlier upsert stay",
           [dropped('  rcall("DEL", schedulerKey)\n')],
           [dropped('  rcall("DEL", schedulerKey) -- remove all attributes and then re-insert '
                    'new ones\n')]),
    mutant("empty-template-data-stored", "empty template data ({}) is stored in the hash",
           [('  if templateData ~= "{}" then', "  if templateData then")],
           [("  if templateData and templateData ~= '{}' then", "  if templateData then")]),
    mutant("iteration-without-rjk", "an iteration's hash lacks rjk, its scheduler's id",
           [dropped('  if job.repeatJobKey then\n    optional("rjk", job.repeatJobKey)\n  end\n')],
           [dropped('    if repeatJobKey then\n        table.insert(optionalValues, "rjk")\n'
                    '        table.insert(optionalValues, repeatJobKey)\n    end\n')]),
    # --- the upsert's replacement ---
    mutant("replacement-moves", "an upsert with the same every moves the iteration to a new "
           "fire time instead of keeping it",
           [dropped("  if every and not everyChanged then\n    nextMillis = prevMillis\n  end\n")],
           [dropped("    if every and not updatedEvery then\n        nextMillis = prevMillis\n"
                    "    end\n")]),
    mutant("waiting-iteration-kept", "an upsert leaves an iteration in wait and adds another",
           [('    if rcall("LREM", list, 1, jobId) == 0 then',
             '    if true then')],
           [('        if rcall("LREM", pausedOrWaitKey, 1, jobId) > 0 then',
             "        if false then")]),
    mutant("replaced-iteration-keeps-dedup", "a replaced iteration's deduplication key stays",
           [dropped("  releaseDedupKeyOfRemovedJob(base, jobKey, jobId)\n")],
           [("removeJob(jobId, true, prefixKey, true --[[remove debounce key]] )",
             "removeJob(jobId, true, prefixKey, false)")]),
    # --- id collisions ---
    mutant("pattern-collision-ignored", "a pattern iteration id held by another job is "
           "overwritten instead of -10",
           [dropped("    if not replaced then\n      return -10\n    end\n")],
           [("    else\n        hasCollision = true\n    end",
             "    else\n        hasCollision = false\n    end")]),
    mutant("no-slot-walk", "an every iteration whose id is taken gives -11 at once, without "
           "trying the next slots",
           [("tries >= 32", "tries >= 1")],
           [("local maxSlotScans = 32", "local maxSlotScans = 1")]),
    mutant("slot-walk-33", "an every upsert walks 33 slots, one more than BullMQ",
           [("tries >= 32", "tries >= 33")],
           [("local maxSlotScans = 32", "local maxSlotScans = 33")]),
    # --- the worker's next iteration ---
    mutant("producer-unchecked", "any producer adds the next iteration, not only the current "
           "one", [dropped('if ARGV[7] ~= "repeat:" .. schedulerId .. ":" .. prevMillis then\n'
                           "  return nil\nend\n")],
           [("    if producerId == currentDelayedJobId then", "    if true then")]),
    mutant("no-duplicated-event", "a next iteration that exists already gives no duplicated "
           "event", [dropped(_OURS_DUPLICATED)], [dropped(_OFF_DUPLICATED)]),
    mutant("next-opts-from-template", "the next iteration takes the scheduler's template opts, "
           "not the opts the worker sends",
           [("local iterationOpts = cmsgpack.unpack(ARGV[4])",
             'local iterationOpts = cjson.decode(rcall("HGET", KEYS[1] .. ":" .. ARGV[2], '
             '"opts") or "{}")')],
           [("local jobOpts = cmsgpack.unpack(ARGV[4])",
             'local jobOpts = cjson.decode(rcall("HGET", KEYS[1] .. ":" .. ARGV[2], "opts") '
             'or "{}")')]),
    mutant("iteration-count-not-incremented", "the next iteration leaves ic as it was",
           [dropped('rcall("HINCRBY", schedulerKey, "ic", 1)\n')],
           [dropped('            rcall("HINCRBY", schedulerKey, "ic", 1)\n')]),
    # --- removal ---
    mutant("removal-keeps-delayed-iteration", "removing a scheduler leaves its delayed "
           "iteration", [('    if rcall("ZREM", delayedKey, jobId) == 1 then',
                          "    if false then")],
           [('  if(rcall("ZREM", KEYS[2], delayedJobId) == 1) then', "  if(false) then")]),
    mutant("removal-without-event", "removing a scheduler's delayed iteration emits no removed "
           "event",
           [dropped('      rcall("XADD", eventsKey, "*", "event", "removed", "jobId", jobId, '
                    '"prev",\n        "delayed")\n')],
           [dropped('    rcall("XADD", KEYS[3], "*", "event", "removed", "jobId", delayedJobId, '
                    '"prev", "delayed")\n')]),
)
