"""The getters' and the maintenance calls' rules of the `properties` state machine, mixed into
`conformance.properties.machine.DifferentialMachine` beside the other rules.

`read` draws one getter (getCounts, getCountsPerPriority, getState, getRanges, isFinished,
isJobInList, isMaxed, getMetrics) and `maintain` one maintenance call (drain, clean,
obliterate, retry or promote in bulk, reprocess a finished job, saveStacktrace,
removeOrphanedJobs), each judged on whatever state the other rules built. One rule each keeps
the other rules' share of the steps: a rule per getter would crowd them out. Each op is drawn
from the release its script (or argument) arrived in, as the vectors claim them.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from conformance.properties.queue_rules import MachineState
from reference_impl import versions
from reference_impl.getter_ops import (
    GetCounts,
    GetCountsPerPriority,
    GetMetrics,
    GetRanges,
    GetState,
    IsFinished,
    IsJobInList,
    IsMaxed,
)
from reference_impl.maintenance_ops import (
    CleanJobsInSet,
    Drain,
    MoveJobsToWait,
    Obliterate,
    RemoveOrphanedJobs,
    ReprocessJob,
    SaveStacktrace,
)
from reference_impl.model import QueueModel
from reference_impl.ops import Op
from reference_impl.versions import Version

#: The state names a client passes (Queue.getJobCounts' and getRanges' types, `waiting` as
#: `wait`), and one that is no state.
STATE_NAMES = ("wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
               "waiting-children", "repeat", "nothing")
LISTS = ("wait", "active", "paused")
#: Range ends: from the head, past the end, to the end, and counted from the end.
INDEXES = (0, 1, 2, 5, -1, -2)
#: How far ahead of the clock a getCounts cutoff lies: none, now, and later.
CUTOFFS = (None, 0, 1, 1000, 10_000)
CLEANED = ("wait", "active", "delayed", "prioritized", "completed", "failed")
#: How far back of the clock a clean's timestamp lies (its grace).
GRACES = (0, 1, 100, 5000)
COUNTS = (1, 2, 1000)


class GetterRules(MachineState):
    """The `read` and `maintain` rules."""

    model: QueueModel
    ctx: Any

    def _since(self, version: Version) -> bool:
        protocol: Version = self.ctx.protocol
        return protocol >= version

    def _getter(self, data: st.DataObject) -> Op:
        kind = data.draw(st.sampled_from(("counts", "per-priority", "state", "ranges",
                                          "finished", "in-list", "maxed", "metrics")))
        names = st.lists(st.sampled_from(STATE_NAMES), min_size=1, max_size=4).map(tuple)
        ref = data.draw(st.integers(-1, 7))
        if kind == "counts":
            ahead = data.draw(st.sampled_from(CUTOFFS)) \
                if self._since(versions.COUNTS_CUTOFF) else None
            return GetCounts(data.draw(names), None if ahead is None else self.now + ahead)
        if kind == "per-priority" and self._since(versions.PRIORITY_COUNTS):
            return GetCountsPerPriority(data.draw(
                st.lists(st.sampled_from((0, 1, 2, 3, 7)), min_size=1, max_size=3).map(tuple)))
        if kind == "ranges":
            return GetRanges(data.draw(names), data.draw(st.sampled_from(INDEXES)),
                             data.draw(st.sampled_from(INDEXES)), data.draw(st.booleans()))
        if kind == "finished":
            # With the value only for a job whose hash exists: the missing job's message names
            # the full key, which the model does not know.
            job_id = self._job(ref)
            return IsFinished(job_id, data.draw(st.booleans())
                              and self.model.store.exists(job_id))
        if kind == "in-list":
            return IsJobInList(data.draw(st.sampled_from(LISTS)), self._job(ref))
        if kind == "maxed" and self._since(versions.GLOBAL_CONCURRENCY):
            return IsMaxed()
        if kind == "metrics" and self._since(versions.METRICS_SCRIPT):
            return GetMetrics(data.draw(st.sampled_from(("completed", "failed"))),
                              data.draw(st.sampled_from(INDEXES)),
                              data.draw(st.sampled_from(INDEXES)))
        return GetState(self._job(ref), data.draw(st.booleans()))

    @rule(data=st.data())
    def read(self, data: st.DataObject) -> None:
        """One getter, on whatever the queue holds now."""
        self._apply(self._getter(data))

    def _maintenance(self, data: st.DataObject) -> Op:
        kind = data.draw(st.sampled_from(("drain", "clean", "obliterate", "retry", "promote",
                                          "reprocess", "stacktrace", "orphans")))
        job_id = self._job(data.draw(st.integers(-1, 7)))
        count = data.draw(st.sampled_from(COUNTS))
        if kind == "drain":
            return Drain(data.draw(st.booleans()))
        if kind == "clean":
            return CleanJobsInSet(data.draw(st.sampled_from(CLEANED)),
                                  self.now - data.draw(st.sampled_from(GRACES)),
                                  data.draw(st.sampled_from((0, 1, 2))))
        if kind == "obliterate":
            return Obliterate(count, data.draw(st.booleans()))
        if kind == "retry":
            return MoveJobsToWait(data.draw(st.sampled_from(("failed", "completed"))), count,
                                  self.now)
        if kind == "promote":
            return MoveJobsToWait("delayed", count)
        if kind == "reprocess":
            return ReprocessJob(job_id, data.draw(st.sampled_from(("failed", "completed"))),
                                data.draw(st.booleans()), data.draw(st.booleans()),
                                data.draw(st.booleans()))
        if kind == "stacktrace":
            return SaveStacktrace(job_id, '["Error: e"]', "e")
        return RemoveOrphanedJobs((job_id,))

    @rule(data=st.data())
    def maintain(self, data: st.DataObject) -> None:
        """One maintenance call (6.x: the calls are claimed from 6.0.0 on)."""
        if self._since(versions.WORKER_SINCE):
            self._apply(self._maintenance(data))
