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
prevCount], points, number of points]`, a field the hash lacks as None; `GetJobs` a list per
type of `[id, {field: value}]` pairs; `Paginate` `[cursor, offset, items, total, jobs]` (a
hash's items as `[field, value]` pairs, each job as `{field: value}`), or `[0, 0, [], 0]` for a
missing key; `GetJob` `{field: value}` or None; `GetJobLogs` `{"logs": [...], "count": n}`.
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


@dataclass(frozen=True)
class GetJobs:
    """Queue.getJobs (getJobs-1, from 5.81.1): for each of `types`, the jobs from `start` to
    `end` with their hashes, read in one script; an id without a hash is skipped.

    Sorted sets are read as getRanges reads them; a list when `asc` is read from its tail and
    reversed by the script itself (the oldest job first). A bounded window (`start` and `end`
    both >= 0) is backfilled: the script reads on past skipped ids, a window's worth at a
    time, at most `GET_JOBS_MAX_ITERATIONS` reads per type."""

    types: Sequence[str]
    start: int = 0
    end: int = -1
    asc: bool = False


#: The backfill bound the Node client passes getJobs (GET_JOBS_MAX_BACKFILL_ITERATIONS).
GET_JOBS_MAX_ITERATIONS = 5


@dataclass(frozen=True)
class Paginate:
    """Job.getDependencies' read (paginate-1): a page of the set or hash `key` (a parent's
    `:dependencies` set or `:processed` hash), items `start` to `end` (-1: to the last),
    counted from `offset`; with `fetch_jobs`, the hash of each item (a child's full key) too.

    The script scans the key (SSCAN or HSCAN, COUNT 100) and takes the items whose running
    offset falls in [start, start + size), size `end - start + 1` (with `end` -1, the item
    count: one past the last)."""

    key: str
    start: int = 0
    end: int = -1
    offset: int = 0
    fetch_jobs: bool = False


#: The scan chunk paginate asks for (findPage's maxCount) and the scans the Node client
#: allows it per call (paginate's maxIterations).
PAGINATE_COUNT = 100
PAGINATE_MAX_ITERATIONS = 5


@dataclass(frozen=True)
class GetJob:
    """Queue.getJob / Job.fromId, a plain read (no script): HGETALL of `<prefix><id>`; the
    job's fields, or None when it has no hash."""

    job_id: str


@dataclass(frozen=True)
class GetJobLogs:
    """Queue.getJobLogs(jobId, start, end, asc), a plain read (no script) of `<id>:logs`, which
    addLog RPUSHes: `{"logs": [...], "count": LLEN}`. Ascending, LRANGE start end; descending,
    LRANGE -(end+1) -(start+1) reversed (the newest first)."""

    job_id: str
    start: int = 0
    end: int = -1
    asc: bool = True


GetterOp = (GetCounts | GetCountsPerPriority | GetState | GetRanges | IsFinished | IsJobInList
            | IsMaxed | GetMetrics | GetJobs | Paginate | GetJob | GetJobLogs)

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
    "getJobs": GetJobs,
    "paginate": Paginate,
    "getJob": GetJob,
    "getJobLogs": GetJobLogs,
}
#: The reads a client makes with plain commands, not a script, and why a scripts directory
#: cannot be judged on them: they reach adapters and clients only.
PLAIN_READS: dict[str, str] = {
    "getJob": "a plain read (the client's HGETALL of the job's key, no script): judged on "
              "adapters and clients",
    "getJobLogs": "a plain read (the client's LRANGE and LLEN of <id>:logs, no script): "
                  "judged on adapters and clients",
}
#: Vector spelling of the getter ops' fields, where it differs from the Python name.
GETTER_FIELDS = {"return_value": "returnValue", "list_name": "list", "fetch_jobs": "fetchJobs"}
