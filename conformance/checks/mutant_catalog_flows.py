"""The flows' part of the mutant catalog: a child's link to its parent, the parent's release,
the failure policies, and a removed child's unlink.

Our `lua/` keeps this logic in the includes `beginJobAdd`, `storeJob`, `handleDuplicatedJob`,
`placeReleasedParent`, `releaseWaitingParent`, `recordProcessedChild`, `handleFailedChild` and
in `addParentJob-6.lua` and `moveToFinished-14.lua`; the official scripts inline it
(`storeJob`, `handleDuplicatedJob`, `moveParentToWait`, `moveParentToWaitIfNoPendingDependencies`,
`updateParentDepsIfNeeded`, `moveChildFromDependenciesIfNeeded`,
`handleChildFailureAndMoveParentToWait`, `removeParentDependencyKey`). The official side is the
pinned PyPI release, whose flow scripts are npm 6.4.0's: every mutant here is of logic both
have (the deferred release of 6.5.1 has none).
"""

from __future__ import annotations

from conformance.checks.mutant_types import Mutant, dropped, mutant

# Where a released parent goes (ours: placeReleasedParent; official: moveParentToWait).
_OURS_PRIORITY = "  local priority = tonumber(fields[1]) or 0\n"
_OURS_DELAY = "  local delay = tonumber(fields[2]) or 0\n"
_OFF_FIELDS = ("    local priority = tonumber(jobAttributes[1]) or 0\n"
               "    local delay = tonumber(jobAttributes[2]) or 0\n")
_OURS_TO_WAIT = '"RPUSH", parentId, pausedOrMaxed)'
_OFF_TO_WAIT = ('addJobInTargetList(parentWaitKey, parentMarkerKey, "RPUSH", '
                "isParentPausedOrMaxed, parentId)")
_OURS_RELEASED_EVENT = ('  end\n  rcall("XADD", prefix .. "events", "*", "event", "waiting", '
                        '"jobId", parentId,\n    "prev", "waiting-children")\n')
_OFF_RELEASED_EVENT = ('        rcall("XADD", parentQueueKey .. ":events", "*", "event", '
                       '"waiting", "jobId", parentId, "prev",\n            "waiting-children")\n')
# A failed child's policy (ours: handleFailedChild; official: moveChildFromDependenciesIfNeeded).
_OURS_IDOF = '    if idof then\n      rcall("HSET", parentKey .. ":failed", childKey, reason)\n'
_OFF_IDOF = "        if parentData['idof'] then\n"
_OURS_FPOF_RELEASE = ('  if released then\n    rcall("HSET", parentKey, "defa", deferredFailure)\n'
                      "    placeReleasedParent(parentQueueKey, parentKey, parentId, now)\n")
_OFF_FPOF_RELEASE = ('      rcall("HSET", parentKey, "defa", deferredFailure)\n'
                     "      moveParentToWait(parentQueueKey, parentKey, parentId, timestamp)\n")

FLOW_MUTANTS: tuple[Mutant, ...] = (
    # --- adding a child or a parent ---
    mutant("child-no-parent-record", "a child's hash lacks the parent record (`parent`)",
           [dropped('    optional("parent", job.parentJson)\n')],
           [dropped('        table.insert(optionalValues, "parent")\n'
                    "        table.insert(optionalValues, parentData)\n")]),
    mutant("child-not-a-dependency", "a child never joins its parent's :dependencies",
           [dropped('    rcall("SADD", job.parentDepsKey, job.key)\n')],
           [('rcall("SADD", parentDependenciesKey, jobIdKey)', "local _ = 0")]),
    mutant("missing-parent-accepted", "a child of a missing parent is added (no -5)",
           [dropped('    if rcall("EXISTS", job.parentKey) ~= 1 then\n      return nil, -5\n'
                    "    end\n")],
           [dropped('    if rcall("EXISTS", parentKey) ~= 1 then return -5 end\n')]),
    mutant("parent-scored-zero", "a parent is put in waiting-children at score 0, not its "
           "timestamp",
           [('rcall("ZADD", waitingChildrenKey, timestamp, job.id)',
             'rcall("ZADD", waitingChildrenKey, 0, job.id)')],
           [('rcall("ZADD", waitChildrenKey, timestamp, jobId)',
             'rcall("ZADD", waitChildrenKey, 0, jobId)')]),
    mutant("other-parent-replaced", "a custom id held by another existing parent is taken "
           "over (no -7)",
           [dropped("    return -7\n")],
           [dropped("      return -7\n")]),
    # --- a child completing ---
    mutant("processed-not-recorded", "a completed child's value is not written to "
           ":processed",
           [dropped('  rcall("HSET", parentKey .. ":processed", childKey, value)\n')],
           [dropped('  rcall("HSET", processedSet, jobIdKey, returnvalue)\n')]),
    mutant("completed-child-stays-pending", "a completed child stays in :dependencies",
           [('rcall("SREM", parentKey .. ":dependencies", jobKey) == 1',
             'rcall("SISMEMBER", parentKey .. ":dependencies", jobKey) == 1')],
           [('if rcall("SREM", dependenciesSet, jobIdKey) == 1 then',
             'if rcall("SISMEMBER", dependenciesSet, jobIdKey) == 1 then')]),
    mutant("released-with-children-pending", "a parent is released while children are "
           "pending",
           [('  if rcall("SCARD", dependenciesKey) == 0 then\n    releaseParentIfWaiting',
             "  if true then\n    releaseParentIfWaiting")],
           [('local doNotHavePendingDependencies = rcall("SCARD", parentDependenciesKey) == 0',
             "local doNotHavePendingDependencies = true")]),
    # --- where a released parent goes ---
    mutant("released-to-tail", "a released parent is LPUSHed (taken last), not RPUSHed",
           [(_OURS_TO_WAIT, _OURS_TO_WAIT.replace("RPUSH", "LPUSH"))],
           [(_OFF_TO_WAIT, _OFF_TO_WAIT.replace("RPUSH", "LPUSH"))]),
    mutant("released-ignores-priority", "a released parent with a priority goes to wait",
           [(_OURS_PRIORITY, "  local priority = 0\n")],
           [(_OFF_FIELDS, _OFF_FIELDS.replace("tonumber(jobAttributes[1]) or 0", "0"))]),
    mutant("released-ignores-delay", "a released parent with a delay goes to wait",
           [(_OURS_DELAY, "  local delay = 0\n")],
           [(_OFF_FIELDS, _OFF_FIELDS.replace("tonumber(jobAttributes[2]) or 0", "0"))]),
    mutant("released-delay-banded", "a released delayed parent is scored one above "
           "(now + delay) * 0x1000",
           [('fireAt * 0x1000, parentId)', "fireAt * 0x1000 + 1, parentId)")],
           [("        local score = delayedTimestamp * 0x1000\n",
             "        local score = delayedTimestamp * 0x1000 + 1\n")]),
    mutant("released-no-event", "missing event: no 'waiting ... prev waiting-children' for "
           "a released parent",
           [(_OURS_RELEASED_EVENT, "  end\n")],
           [dropped(_OFF_RELEASED_EVENT)]),
    mutant("released-marker-while-paused", "a parent released in a paused queue writes "
           "marker \"0\"",
           [('  local pausedOrMaxed = isQueuePausedOrMaxed(prefix .. "meta", '
             'prefix .. "active")\n', "  local pausedOrMaxed = false\n")],
           [("            local isParentPausedOrMaxed =\n"
             "                isQueuePausedOrMaxed(parentMetaKey, parentActiveKey)\n",
             "            local isParentPausedOrMaxed = false\n")]),
    # --- a child failing ---
    mutant("failure-without-policy-releases", "a failed child without a policy still "
           "leaves :dependencies and releases its parent",
           [dropped("  if not (fpof or cpof or idof or rdof) then\n    return\n  end\n")],
           [("    elseif parentData['idof'] or parentData['rdof'] then\n", "    else\n")]),
    mutant("fpof-no-unsuccessful", "fpof: the child is not recorded in :unsuccessful",
           [dropped('    rcall("ZADD", parentKey .. ":unsuccessful", now, childKey)\n')],
           [dropped('        rcall("ZADD", parentUnsuccessfulChildrenKey, timestamp, '
                    "childKey)\n")]),
    mutant("fpof-no-defa", "fpof: the released parent carries no defa",
           [(_OURS_FPOF_RELEASE, _OURS_FPOF_RELEASE.replace(
               '    rcall("HSET", parentKey, "defa", deferredFailure)\n', ""))],
           [(_OFF_FPOF_RELEASE, _OFF_FPOF_RELEASE.replace(
               '      rcall("HSET", parentKey, "defa", deferredFailure)\n', ""))]),
    mutant("fpof-parent-lost", "fpof: the parent leaves waiting-children for nowhere",
           [(_OURS_FPOF_RELEASE, _OURS_FPOF_RELEASE.replace(
               "    placeReleasedParent(parentQueueKey, parentKey, parentId, now)\n", ""))],
           [(_OFF_FPOF_RELEASE, _OFF_FPOF_RELEASE.replace(
               "      moveParentToWait(parentQueueKey, parentKey, parentId, timestamp)\n",
               ""))]),
    mutant("fpof-defa-on-failed-parent", "fpof: a parent that already failed gets defa",
           [('  elseif not rcall("ZSCORE", parentQueueKey .. ":failed", parentId) then',
             "  elseif true then")],
           [('      if not rcall("ZSCORE", parentQueueKey .. ":failed", parentId) then',
             "      if true then")]),
    mutant("cpof-waits-for-pending", "cpof: the parent waits for its other children",
           [("    releaseParentIfWaiting(parentQueueKey, parentKey, parentId, now)\n  else\n",
             "    releaseParentIfNoPendingChildren(parentQueueKey, parentKey, parentId, "
             "dependenciesKey, now)\n  else\n")],
           [("        moveParentToWaitIfNeeded(parentData['queueKey'], parentKey, "
             "parentData['id'], timestamp)\n",
             "        moveParentToWaitIfNoPendingDependencies(parentData['queueKey'], "
             "parentDependenciesChildrenKey, parentKey, parentData['id'], timestamp)\n")]),
    mutant("idof-no-failed-record", "idof: the reason is not recorded in the parent's :failed",
           [(_OURS_IDOF, "    if idof then\n")],
           [(_OFF_IDOF + "          local parentFailedChildrenKey = parentKey .. \":failed\"\n"
             "          rcall(\"HSET\", parentFailedChildrenKey, childKey, failedReason)\n",
             _OFF_IDOF)]),
    mutant("rdof-records-failed", "rdof: the reason is recorded in :failed as for idof",
           [(_OURS_IDOF, _OURS_IDOF.replace("if idof then", "if idof or rdof then"))],
           [(_OFF_IDOF, "        if parentData['idof'] or parentData['rdof'] then\n")]),
    # --- a child deleted as it finishes ---
    mutant("removed-child-not-unlinked", "a failed child deleted at once (keepJobs count 0) "
           "stays in :dependencies",
           [("  removeJobKeys(jobKey)\n  if parentKey then\n    unlinkRemovedChild(jobKey, "
             "parentKey)",
             "  removeJobKeys(jobKey)\n  if false then\n    unlinkRemovedChild(jobKey, "
             "parentKey)")],
           [dropped("            removeParentDependencyKey(jobIdKey, false, parentKey, "
                    "jobAttributes[3])\n")]),
    # --- a parent in another queue ---
    # KEYS[1] is the child's wait: without ":wait", the child's queue, which is the parent's
    # only when both share a queue. Only a flow across queues can catch it.
    mutant("release-in-child-queue", "a completed child releases its parent in the child's "
           "queue, not the parent's",
           [("    recordProcessedChild(parentQueueKey, parentKey, parentId, jobKey, outcome, "
             "now)\n",
             "    recordProcessedChild(string.sub(KEYS[1], 1, -6), parentKey, parentId, jobKey, "
             "outcome, now)\n")],
           [("updateParentDepsIfNeeded(parentKey, parentQueueKey, dependenciesSet,",
             "updateParentDepsIfNeeded(parentKey, string.sub(KEYS[1], 1, -6), dependenciesSet,")]),
)
