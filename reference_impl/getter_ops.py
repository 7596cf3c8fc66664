"""The queue's getters: the scripts a client runs to read a queue (counts, a job's state, ids
by state, whether a job finished, metrics). Each op mirrors one script call as the Node
client makes it; the vectors give the script's own arguments (the state names a client
passes, its range, its flags).

They read, and one thing more: `getCounts` and `getRanges` delete a legacy (5.x) marker left
at the tail of `wait` or `paused` ("0:<ms>", the list's last item) when the list holds jobs
too, so that it is neither counted nor listed.

Normalized results: `GetCounts`, `GetCountsPerPriority` a list of counts; `GetState` a state
name; `GetRanges` a list of id lists, one per type; `IsFinished` 0, 1, 2 or -1, or with
`return_value` a list (`[1, returnvalue]`, `[2, failedReason]`, `[0]`); `IsJobInList` and
`IsMaxed` 1 or None (the script's Lua false and nil); `GetMetrics` `[[count, prevTS,
prevCount], points, number of points]`, a field the hash lacks as None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class GetCounts:
    """Queue.getJobCounts (getCounts-1): for each of `types` in order, the count of the key
    `<prefix><type>`: LLEN for `wait`, `paused` and `active`, ZCARD for any other name. With
    `cutoff` (ms), `delayed` counts only the jobs due before it (the delayed count of
    Queue.getCountsPerState's `delayedBefore`)."""

    types: Sequence[str]
    cutoff: int | None = None


@dataclass(frozen=True)
class GetCountsPerPriority:
    """Queue.getCountsPerPriority (getCountsPerPriority-2): for each of `priorities` in order,
    the jobs waiting at it; priority 0 is `wait`'s length, any other p the `prioritized` jobs
    scored in [p * 2^32, (p + 1) * 2^32)."""

    priorities: Sequence[int]


@dataclass(frozen=True)
class GetState:
    """Job.getState / Queue.getJobState (getStateV2-8; with `legacy`, getState-8, which Node
    calls on a Redis older than 6.0.6, without LPOS). The first of completed, failed,
    delayed, prioritized, active, waiting (in `wait` or a legacy `paused` list),
    waiting-children holding the job, else unknown."""

    job_id: str
    legacy: bool = False


@dataclass(frozen=True)
class GetRanges:
    """Queue.getRanges (getRanges-1): for each of `types`, the ids from `start` to `end`.

    Sorted sets are read by rank (ZRANGE, or ZREVRANGE when not `asc`). Lists (`wait`,
    `paused`, `active`, whose head is the newest job) are read as they are stored (LRANGE
    start end) when not `asc`; when `asc`, the script reads the same window counted from the
    tail (LRANGE -(end+1) -(start+1), an index -1 read as 0) and returns it in list order, for
    the client to reverse."""

    types: Sequence[str]
    start: int = 0
    end: int = -1
    asc: bool = False


@dataclass(frozen=True)
class IsFinished:
    """Job.isCompleted / isFailed / waitUntilFinished's read (isFinished-3): 1 completed, 2
    failed, 0 neither, -1 no job hash; with `return_value`, a list with the job's returnvalue
    or failedReason beside the code."""

    job_id: str
    return_value: bool = False


@dataclass(frozen=True)
class IsJobInList:
    """Queue.isJobInList's read (isJobInList-1): whether `job_id` is in the list `list_name`
    (`wait`, `active`, `paused`), 1 or None."""

    list_name: str
    job_id: str


@dataclass(frozen=True)
class IsMaxed:
    """Queue.isMaxed (isMaxed-2): whether the active jobs reach the queue's global concurrency
    (meta `concurrency`); 1 or None, and None when no concurrency is set."""


@dataclass(frozen=True)
class GetMetrics:
    """Queue.getMetrics(type, start, end) (getMetrics-2): the `metrics:<type>` hash's count,
    prevTS and prevCount, the data points from `start` to `end` (LRANGE of
    `metrics:<type>:data`), and how many points there are."""

    type: str
    start: int = 0
    end: int = -1


GetterOp = (GetCounts | GetCountsPerPriority | GetState | GetRanges | IsFinished | IsJobInList
            | IsMaxed | GetMetrics)

#: Vector spelling of each getter op.
GETTER_OPS: dict[str, type] = {
    "getCounts": GetCounts,
    "getCountsPerPriority": GetCountsPerPriority,
    "getState": GetState,
    "getRanges": GetRanges,
    "isFinished": IsFinished,
    "isJobInList": IsJobInList,
    "isMaxed": IsMaxed,
    "getMetrics": GetMetrics,
}
#: Vector spelling of the getter ops' fields, where it differs from the Python name.
GETTER_FIELDS = {"return_value": "returnValue", "list_name": "list"}
