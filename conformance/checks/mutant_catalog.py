"""The catalog of deliberate protocol defects used by `bullmq-conformance mutants`.

Each mutant is one defect class, written twice as exact textual replacements: once for our
scripts in `lua/` (`ours`: each pattern lives in exactly one include or top-level file) and once
for the official PyPI bullmq scripts (`official`: inlined, so a pattern is replaced in every
file that contains it). Every pattern must match in its target directory; one that matches
nothing is a catalog error, never a surviving mutant.

This module holds the queue half's mutants and joins the worker half's: `mutant_catalog_finish`
(moveToFinished and the lock check) and `mutant_catalog_worker` (retry, the stall check, lock
renewal, rate limits, deduplication, removal and job updates).
"""

from __future__ import annotations

from conformance.checks.mutant_catalog_finish import FINISH_MUTANTS
from conformance.checks.mutant_catalog_flows import FLOW_MUTANTS
from conformance.checks.mutant_catalog_getters import GETTER_MUTANTS
from conformance.checks.mutant_catalog_maintenance import MAINTENANCE_MUTANTS
from conformance.checks.mutant_catalog_schedulers import SCHEDULER_MUTANTS
from conformance.checks.mutant_catalog_worker import WORKER_MUTANTS
from conformance.checks.mutant_types import Mutant, Replacement
from conformance.checks.mutant_types import mutant as _m
from reference_impl import versions

__all__ = ["CATALOG", "EVERY_ENTRY_DIFFERS", "QUEUE_MUTANTS", "Mutant", "Replacement"]

#: The version whose band bump the `score-before-...` mutant undoes (its name says it).
_BAND_BUMP = versions.text(versions.BAND_BUMP)
_OURS_BAND = ("  local bandFloor = fireAt * 0x1000\n"
              "  local bandCeiling = (fireAt + 1) * 0x1000 - 1\n")
_OFF_BAND = ("  local minScore = delayedTimestamp * 0x1000\n"
             "  local maxScore = (delayedTimestamp + 1 ) * 0x1000 - 1\n")
_OURS_SWEEP = "local dueUpTo = (tonumber(now) + 1) * 0x1000 - 1"
_OFF_SWEEP = '(timestamp + 1) * 0x1000 - 1, "LIMIT", 0, 1000)'
_OURS_PRIO = ('  local arrival = rcall("INCR", priorityCounterKey) % 0x100000000\n'
              "  return priority * 0x100000000 + arrival\n")
_OFF_PRIO = ('  local prioCounter = rcall("INCR", priorityCounterKey)\n'
             "  return priority * 0x100000000 + prioCounter % 0x100000000\n")
_OURS_FETCH = 'local jobId = rcall("RPOPLPUSH", waitKey, activeKey)\n  if jobId and'
_OFF_FETCH = '-- no job ID, try non-blocking move from wait to active\nlocal jobId = rcall('
_OURS_SWEEP_EVENT = ('    rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", jobId, "prev",'
                     ' "delayed")\n')
_OFF_SWEEP_EVENT = ('            rcall("XADD", eventStreamKey, "*", "event", "waiting", "jobId",\n'
                    '                  jobId, "prev", "delayed")\n')
_OURS_CP = ("    insertPrioritized(prioritizedKey, priorityCounterKey, markerKey, priority, "
            "jobId,\n      pausedOrMaxed)")
_OFF_CP = ("            addJobWithPriority(markerKey, prioritizedKey, priority, jobId,\n"
           "                priorityCounter, isPausedOrMaxed)")


def _reuse_counter(counter_key: str) -> str:
    return (f'rcall("ZADD", prioritizedKey, priority * 0x100000000 + tonumber(rcall("GET", '
            f'{counter_key}) or 0) % 0x100000000, jobId)')


#: The queue half: delayed scores, the sweep, adds, priorities, fetch, markers, lifecycle.
QUEUE_MUTANTS: tuple[Mutant, ...] = (
    # --- delayed scores (RESEARCH §3) ---
    _m("shift-0x800", "wrong shift: F*0x800 instead of F*0x1000",
       [(_OURS_BAND, _OURS_BAND.replace("0x1000", "0x800"))],
       [(_OFF_BAND, _OFF_BAND.replace("0x1000", "0x800"))]),
    _m("no-band-bump", "missing band bump: every job of a band takes the floor",
       [("  return topScore + 1, fireAt\n", "  return bandFloor, fireAt\n")],
       [("return currentMaxScore + 1, delayedTimestamp", "return minScore, delayedTimestamp")]),
    _m("saturation-unclamped", "wrong saturation: top+1 past the ceiling, no clamp",
       [("  if topScore >= bandCeiling then\n    return bandCeiling, fireAt\n  end\n", "")],
       [("      if currentMaxScore >= maxScore then\n"
         "        return maxScore, delayedTimestamp\n      else\n", "      if true then\n")]),
    _m("saturation-ceiling-in-next-band", "wrong saturation: ceiling (F+1)*0x1000, not -1",
       [("  local bandCeiling = (fireAt + 1) * 0x1000 - 1\n",
         "  local bandCeiling = (fireAt + 1) * 0x1000\n")],
       [("  local maxScore = (delayedTimestamp + 1 ) * 0x1000 - 1\n",
         "  local maxScore = (delayedTimestamp + 1 ) * 0x1000\n")]),
    _m("textbook-raw-scores", "textbook raw scores: F instead of F*4096 everywhere",
       [(_OURS_BAND, _OURS_BAND.replace("0x1000", "1")),
        (_OURS_SWEEP, _OURS_SWEEP.replace("0x1000", "1")),
        ("  return headScore / 0x1000\n", "  return headScore / 1\n")],
       [(_OFF_BAND, _OFF_BAND.replace("0x1000", "1")),
        (_OFF_SWEEP, _OFF_SWEEP.replace("0x1000", "1")),
        ("      return nextTimestamp / 0x1000\n", "      return nextTimestamp / 1\n")]),
    # --- the promotion sweep (§6) ---
    _m("promote-bound-plus-one", "promote bound off by one: (now+1)*4096 included",
       [(_OURS_SWEEP, _OURS_SWEEP.removesuffix(" - 1"))],
       [(_OFF_SWEEP, _OFF_SWEEP.replace(" - 1,", ","))]),
    _m("promote-bound-minus-one", "promote bound off by one: (now+1)*4096-1 excluded",
       [(_OURS_SWEEP, _OURS_SWEEP.replace("- 1", "- 2"))],
       [(_OFF_SWEEP, _OFF_SWEEP.replace("- 1,", "- 2,"))]),
    _m("promote-limit-100", "wrong promote limit: 100 per sweep instead of 1000",
       [('dueUpTo, "LIMIT", 0, 1000)', 'dueUpTo, "LIMIT", 0, 100)')],
       [(_OFF_SWEEP, _OFF_SWEEP.replace("1000)", "100)"))]),
    _m("promote-limit-1001", "wrong promote limit: 1001 per sweep instead of 1000",
       [('dueUpTo, "LIMIT", 0, 1000)', 'dueUpTo, "LIMIT", 0, 1001)')],
       [(_OFF_SWEEP, _OFF_SWEEP.replace("1000)", "1001)"))]),
    _m("sweep-rpush", "RPUSH instead of LPUSH on promotion (sweep)",
       [('      rcall("LPUSH", waitKey, jobId)\n', '      rcall("RPUSH", waitKey, jobId)\n')],
       [('rcall("LPUSH", targetKey, jobId)', 'rcall("RPUSH", targetKey, jobId)')]),
    _m("sweep-keeps-delay-field", "delay field not reset on promotion (sweep)",
       [('    rcall("HSET", jobKey, "delay", 0)\n  end\n', "  end\n")],
       [('"prev", "delayed")\n            rcall("HSET", jobKey, "delay", 0)\n',
         '"prev", "delayed")\n')]),
    _m("sweep-no-waiting-event", "missing event: no 'waiting prev delayed' on promotion",
       [(_OURS_SWEEP_EVENT, "")], [(_OFF_SWEEP_EVENT, "")]),
    # --- promote(id) ---
    _m("promote-job-rpush", "RPUSH instead of LPUSH on promotion (promote(id))",
       [('addReadyJob(waitKey, markerKey, "LPUSH", jobId, pausedOrMaxed)',
         'addReadyJob(waitKey, markerKey, "RPUSH", jobId, pausedOrMaxed)')],
       [('addJobInTargetList(KEYS[2], markerKey, "LPUSH", isPausedOrMaxed, jobId)',
         'addJobInTargetList(KEYS[2], markerKey, "RPUSH", isPausedOrMaxed, jobId)')]),
    _m("promote-job-keeps-delay-field", "delay field not reset on promotion (promote(id))",
       [('"prev", "delayed")\nrcall("HSET", jobKey, "delay", 0)\n', '"prev", "delayed")\n')],
       [('"delayed");\n    rcall("HSET", jobKey, "delay", 0)\n', '"delayed");\n')]),
    # --- adds ---
    _m("add-rpush-fifo", "RPUSH instead of LPUSH on a standard (FIFO) add",
       [('local pushCmd = "LPUSH"\nif opts["lifo"]', 'local pushCmd = "RPUSH"\nif opts["lifo"]')],
       [("local pushCmd = opts['lifo'] and 'RPUSH' or 'LPUSH'",
         "local pushCmd = opts['lifo'] and 'RPUSH' or 'RPUSH'")]),
    _m("no-added-event", "missing event: no 'added' on add",
       [('  rcall("XADD", eventsKey, "*", "event", "added", "jobId", job.id, "name", name)\n',
         "")],
       [('    rcall("XADD", eventsKey, "*", "event", "added", "jobId", jobId, "name", name)\n',
         "")]),
    _m("renamed-prioritized-key", "renamed key suffix: 'prioritized' -> 'priority' on add",
       [("local prioritizedKey = KEYS[4]\nlocal completedKey",
         'local prioritizedKey = cmsgpack.unpack(ARGV[1])[1] .. "priority"\nlocal completedKey')],
       [("local priorityKey = KEYS[4]\n",
         'local priorityKey = cmsgpack.unpack(ARGV[1])[1] .. "priority"\n')]),
    # --- priorities (§5) ---
    _m("priority-shift-2pow31", "wrong priority shift: P*2^31 instead of P*2^32",
       [(_OURS_PRIO, _OURS_PRIO.replace("return priority * 0x100000000",
                                        "return priority * 0x80000000"))],
       [(_OFF_PRIO, _OFF_PRIO.replace("return priority * 0x100000000",
                                      "return priority * 0x80000000"))]),
    _m("counter-not-incremented", "counter not incremented: INCRBY pc 0",
       [(_OURS_PRIO, _OURS_PRIO.replace('"INCR", priorityCounterKey',
                                        '"INCRBY", priorityCounterKey, 0'))],
       [(_OFF_PRIO, _OFF_PRIO.replace('"INCR", priorityCounterKey',
                                      '"INCRBY", priorityCounterKey, 0'))]),
    _m("counter-not-wrapped", "counter not wrapped: no % 2^32",
       [(_OURS_PRIO, _OURS_PRIO.replace(") % 0x100000000", ")"))],
       [(_OFF_PRIO, _OFF_PRIO.replace("prioCounter % 0x100000000", "prioCounter"))]),
    # --- fetch (§7.4) ---
    _m("zpopmax", "ZPOPMAX instead of ZPOPMIN on a prioritized fetch",
       [('rcall("ZPOPMIN", prioritizedKey)', 'rcall("ZPOPMAX", prioritizedKey)')],
       [('rcall("ZPOPMIN", priorityKey)', 'rcall("ZPOPMAX", priorityKey)')]),
    _m("fetch-prioritized-first", "fetch order swapped: prioritized before wait",
       [(_OURS_FETCH, 'local jobId = (rcall("ZCARD", prioritizedKey) > 0 and '
                      "popPrioritizedToActive(prioritizedKey, activeKey, priorityCounterKey))"
                      ' or rcall("RPOPLPUSH", waitKey, activeKey)\n  if jobId and')],
       [(_OFF_FETCH, _OFF_FETCH.replace("local jobId = rcall(", 'local jobId = (rcall("ZCARD", '
                     'KEYS[3]) > 0 and moveJobFromPrioritizedToActive(KEYS[3], activeKey, '
                     "KEYS[10])) or rcall("))]),
    _m("pc-never-deleted", "pc never deleted when prioritized is empty",
       [('    rcall("DEL", priorityCounterKey)\n', "")],
       [('    rcall("DEL", priorityCounterKey)\n', "")]),
    # --- markers (§4) ---
    _m("marker-not-divided", "marker not divided: head score instead of head/4096",
       [("  return headScore / 0x1000\n", "  return headScore\n")],
       [("      return nextTimestamp / 0x1000\n", "      return nextTimestamp\n")]),
    _m("delay-marker-member-0", "wrong marker member: \"0\" for delayed instead of \"1\"",
       [('rcall("ZADD", markerKey, wakeAt, "1")', 'rcall("ZADD", markerKey, wakeAt, "0")')],
       [('rcall("ZADD", markerKey, nextTimestamp, "1")',
         'rcall("ZADD", markerKey, nextTimestamp, "0")')]),
    _m("base-marker-when-paused", "base marker \"0\" written while paused or maxed",
       [("  if pausedOrMaxed then\n    return\n  end\n", "")],
       [('  if not isPausedOrMaxed then\n    rcall("ZADD", markerKey, 0, "0")\n',
         '  if true then\n    rcall("ZADD", markerKey, 0, "0")\n')]),
    # --- lifecycle: changeDelay, moveToDelayed, changePriority, pause ---
    _m("change-delay-without-bump", "changeDelay without the band bump",
       [('rcall("HSET", jobKey, "delay", delay)\nrcall("ZADD", delayedKey, score, jobId)',
         'rcall("HSET", jobKey, "delay", delay)\n'
         'rcall("ZADD", delayedKey, fireAt * 0x1000, jobId)')],
       [('rcall("ZADD", KEYS[1], score, jobId)',
         'rcall("ZADD", KEYS[1], delayedTimestamp * 0x1000, jobId)')]),
    _m("change-delay-from-timestamp", "changeDelay scores from the job's timestamp, not now",
       [("getDelayedScore(delayedKey, now, delay)",
         'getDelayedScore(delayedKey, rcall("HGET", jobKey, "timestamp"), delay)')],
       [("getDelayedScore(KEYS[1], ARGV[2], delay)",
         'getDelayedScore(KEYS[1], rcall("HGET", ARGV[4], "timestamp"), delay)')]),
    _m("move-to-delayed-forgets-marker", "moveToDelayed forgets the delay marker",
       [("end\n\naddDelayMarkerIfNeeded(markerKey, delayedKey)\nreturn 0", "end\n\nreturn 0")],
       [("    addDelayMarkerIfNeeded(markerKey, delayedKey)\n    return 0", "    return 0")]),
    _m("atm-not-incremented", "moveToDelayed does not count the attempt (atm)",
       [('if ARGV[6] == "0" then\n  rcall("HINCRBY", jobKey, "atm", 1)',
         'if ARGV[6] == "0" then\n  rcall("HGET", jobKey, "atm")')],
       [('rcall("HINCRBY", jobKey, "atm", 1)', 'rcall("HGET", jobKey, "atm")')]),
    _m("change-priority-reuses-counter", "changePriority reuses the current pc value",
       [(_OURS_CP, "    " + _reuse_counter("priorityCounterKey")
         + "\n    addBaseMarkerIfNeeded(markerKey, pausedOrMaxed)")],
       [(_OFF_CP, "            " + _reuse_counter("priorityCounter")
         + "\n            addBaseMarkerIfNeeded(markerKey, isPausedOrMaxed)")]),
    _m("pause-keeps-marker", "pause keeps the marker key",
       [('  rcall("DEL", markerKey)\n', "")],
       [('    rcall("DEL", markerKey)\n', "")]),
    _m("release-keeps-stalled", "releasing the lock leaves the job in the stalled set",
       [('    rcall("SREM", stalledKey, jobId)\n', "")],
       [('      rcall("SREM", stalledKey, jobId)\n', "")]),
    # --- a current port that kept an older protocol's behaviour (named by its range) ---
    _m(f"score-before-{_BAND_BUMP}", "delayed add scores F*0x1000 + the id counter's low 12 "
       f"bits, as before {_BAND_BUMP}",
       [("local score, fireAt = getDelayedScore(delayedKey, timestamp, tonumber(delay))\n",
         "local score, fireAt = getDelayedScore(delayedKey, timestamp, tonumber(delay))\n"
         'score = fireAt * 0x1000 + tonumber(rcall("GET", KEYS[3])) % 0x1000\n')],
       [("  local score, delayedTimestamp = getDelayedScore(delayedKey, timestamp, "
         "tonumber(delay))\n  rcall(\"ZADD\", delayedKey, score, jobId)\n",
         "  local score, delayedTimestamp = getDelayedScore(delayedKey, timestamp, "
         "tonumber(delay))\n  score = delayedTimestamp * 0x1000 + "
         "tonumber(rcall(\"GET\", KEYS[3])) % 0x1000\n"
         "  rcall(\"ZADD\", delayedKey, score, jobId)\n")]),
    _m("pause-renames-wait", f"pause renames wait to paused, as before "
       f"{versions.text(versions.NO_PAUSED_LIST)}",
       [('  rcall("HSET", metaKey, "paused", 1)\n',
         '  if rcall("EXISTS", sourceKey) == 1 then rcall("RENAME", sourceKey, targetKey) end\n'
         '  rcall("HSET", metaKey, "paused", 1)\n')],
       [('    rcall("HSET", KEYS[3], "paused", 1)\n',
         '    if rcall("EXISTS", KEYS[1]) == 1 then rcall("RENAME", KEYS[1], KEYS[2]) end\n'
         '    rcall("HSET", KEYS[3], "paused", 1)\n')]),
    _m("resume-without-base-marker", "resume does not write marker \"0\" for ready jobs",
       [('prioritizedKey) > 0 then\n    rcall("ZADD", markerKey, 0, "0")\n',
         "prioritizedKey) > 0 then\n")],
       [('priority jobs\n        rcall("ZADD", markerKey, 0, "0")\n', "priority jobs\n")]),
)

#: Every mutant `bullmq-conformance mutants` runs: the queue half, the worker half, the flows,
#: the job schedulers, the getters and the maintenance calls.
CATALOG: tuple[Mutant, ...] = (QUEUE_MUTANTS + FINISH_MUTANTS + WORKER_MUTANTS + FLOW_MUTANTS
                              + SCHEDULER_MUTANTS + GETTER_MUTANTS + MAINTENANCE_MUTANTS)

_OURS_CEILING = "  local bandCeiling = (fireAt + 1) * 0x1000 - 1\n"
_SHIFT_BAND = ('  for _, member in ipairs(rcall("ZRANGEBYSCORE", delayedKey, fireAt * 0x1000, '
               "bandCeiling)) do\n"
               '    rcall("ZINCRBY", delayedKey, 1, member)\n  end\n')

#: Not in the catalog: the defect `bench` times a failing run with (for our `lua/` only). The
#: largest keys of most vectors then differ in every entry: each `added` and each promotion event
#: loses a field (a 1000-entry events stream differs throughout); an add moves every job of its
#: band up one and scores itself one high (a 4096-job band differs throughout); prioritized
#: scores are one high; resume moves legacy paused jobs to the head of wait, reversed (a
#: 7001-item list differs throughout).
EVERY_ENTRY_DIFFERS = _m(
    "every-entry-differs", "events lose a field, scores one high, migrated jobs reversed",
    [('"event", "added", "jobId", job.id, "name", name)', '"event", "added", "jobId", job.id)'),
     (_OURS_SWEEP_EVENT, _OURS_SWEEP_EVENT.replace(', "prev", "delayed"', "")),
     ("  local bandFloor = fireAt * 0x1000\n", "  local bandFloor = fireAt * 0x1000 + 1\n"),
     (_OURS_CEILING, _OURS_CEILING + _SHIFT_BAND),
     ("  return priority * 0x100000000 + arrival\n",
      "  return priority * 0x100000000 + arrival + 1\n"),
     ('rcall("RPUSH", waitKey, unpack(batch))', 'rcall("LPUSH", waitKey, unpack(batch))')],
    [])
