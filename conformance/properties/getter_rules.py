"""The getters' and the maintenance calls' rules of the `properties` state machine, mixed into
`conformance.properties.machine.DifferentialMachine` beside the other rules.

`read` draws one getter (getCounts, getCountsPerPriority, getState, getRanges, isFinished,
isJobInList, isMaxed, getMetrics) and `maintain` one maintenance call (drain, clean,
obliterate, retry or promote in bulk, reprocess a finished job, saveStacktrace,
removeOrphanedJobs), each judged on whatever state the other rules built. One rule each keeps
the other rules' share of the steps: a rule per getter would crowd them out. Each op is drawn
from the release its script (or argument) arrived in, as the vectors claim them.

getJobs and paginate are left to the vectors: they answer whole job hashes, whose JSON (data,
opts) each client spells its own way, so only seeded hashes give them a fixed answer.
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


_NAMES = st.lists(st.sampled_from(STATE_NAMES), min_size=1, max_size=4).map(tuple)
_INDEX = st.sampled_from(INDEXES)
#: A job among those the machine added (0 the first, -1 an id never added).
_REF = st.integers(-1, 7)

#: A getter as a plain tuple, drawn without the machine's state (which the rule reads after):
#: fixed strategies shrink a failing run much faster than draws made inside the rule.
GETTERS = st.one_of(
    st.tuples(st.just("counts"), _NAMES, st.sampled_from(CUTOFFS)),
    st.tuples(st.just("per-priority"),
              st.lists(st.sampled_from((0, 1, 2, 3, 7)), min_size=1, max_size=3).map(tuple)),
    st.tuples(st.just("state"), _REF, st.booleans()),
    st.tuples(st.just("ranges"), _NAMES, _INDEX, _INDEX, st.booleans()),
    st.tuples(st.just("finished"), _REF, st.booleans()),
    st.tuples(st.just("in-list"), st.sampled_from(LISTS), _REF),
    st.tuples(st.just("maxed")),
    st.tuples(st.just("metrics"), st.sampled_from(("completed", "failed")), _INDEX, _INDEX),
)
#: A maintenance call as a plain tuple (see `GETTERS`).
MAINTENANCE = st.one_of(
    st.tuples(st.just("drain"), st.booleans()),
    st.tuples(st.just("clean"), st.sampled_from(CLEANED), st.sampled_from(GRACES),
              st.sampled_from((0, 1, 2))),
    st.tuples(st.just("obliterate"), st.sampled_from(COUNTS), st.booleans()),
    st.tuples(st.just("retry"), st.sampled_from(("failed", "completed")),
              st.sampled_from(COUNTS)),
    st.tuples(st.just("promote"), st.sampled_from(COUNTS)),
    st.tuples(st.just("reprocess"), _REF, st.sampled_from(("failed", "completed")),
              st.booleans(), st.booleans(), st.booleans()),
    st.tuples(st.just("stacktrace"), _REF),
    st.tuples(st.just("orphans"), _REF),
)


class GetterRules(MachineState):
    """The `read` and `maintain` rules."""

    model: QueueModel
    ctx: Any

    def _since(self, version: Version) -> bool:
        protocol: Version = self.ctx.protocol
        return protocol >= version

    def _getter(self, spec: tuple[Any, ...]) -> Op:
        kind, *args = spec
        if kind == "counts":
            names, ahead = args
            if ahead is None or not self._since(versions.COUNTS_CUTOFF):
                return GetCounts(names)
            return GetCounts(names, self.now + ahead)
        if kind == "per-priority" and self._since(versions.PRIORITY_COUNTS):
            return GetCountsPerPriority(args[0])
        if kind == "ranges":
            names, start, end, asc = args
            return GetRanges(names, start, end, asc)
        if kind == "finished":
            # With the value only for a job whose hash exists: the missing job's message names
            # the full key, which the model does not know.
            job_id = self._job(args[0])
            return IsFinished(job_id, args[1] and self.model.store.exists(job_id))
        if kind == "in-list":
            return IsJobInList(args[0], self._job(args[1]))
        if kind == "maxed" and self._since(versions.GLOBAL_CONCURRENCY):
            return IsMaxed()
        if kind == "metrics" and self._since(versions.METRICS_SCRIPT):
            return GetMetrics(*args)
        if kind == "state":
            return GetState(self._job(args[0]), args[1])
        return GetState(self._job(0))  # a getter older than the protocol judged

    @rule(spec=GETTERS)
    def read(self, spec: tuple[Any, ...]) -> None:
        """One getter, on whatever the queue holds now."""
        self._apply(self._getter(spec))

    def _maintenance(self, spec: tuple[Any, ...]) -> Op:
        kind, *args = spec
        if kind == "drain":
            return Drain(args[0])
        if kind == "clean":
            state, grace, limit = args
            return CleanJobsInSet(state, self.now - grace, limit)
        if kind == "obliterate":
            return Obliterate(*args)
        if kind == "retry":
            state, count = args
            return MoveJobsToWait(state, count, self.now)
        if kind == "promote":
            return MoveJobsToWait("delayed", args[0])
        if kind == "reprocess":
            ref, state, lifo, reset, keep = args
            return ReprocessJob(self._job(ref), state, lifo, reset, keep)
        if kind == "stacktrace":
            return SaveStacktrace(self._job(args[0]), '["Error: e"]', "e")
        return RemoveOrphanedJobs((self._job(args[0]),))

    @rule(spec=MAINTENANCE)
    def maintain(self, spec: tuple[Any, ...]) -> None:
        """One maintenance call (6.x: the calls are claimed from 6.0.0 on)."""
        if self._since(versions.WORKER_SINCE):
            self._apply(self._maintenance(spec))
