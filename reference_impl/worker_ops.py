"""The worker half's ops: finishing, retrying, locks, stall recovery, rate limits, removal and
job updates (docs/RESEARCH.md, the worker sections). Each mirrors one client call, with its
clock passed in.

Normalized results: `MoveToFinished` gives the script's integer code, or `{job, ttl, next}`
when it answered with a fetch-next array; `MoveStalledJobsToWait` and `ExtendLocks` give lists
of job ids; a PTTL read back from Redis is a `Pttl` (in vectors `{pttl: N}`: any value in
(0, N] matches); every other op gives the script's integer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Target = Literal["completed", "failed"]


@dataclass(frozen=True)
class MoveToFinished:
    """Job.moveToCompleted / moveToFailed at `now` (moveToFinished-14).

    `value` is the hash value as the client sends it: the JSON text of the return value, or
    the raw failure message. `keep_jobs` is the packed keepJobs (`{count}` or `{age, count?,
    limit?}`), `attempts` the job's opts.attempts, `fields` the extra job fields the client
    sends (failedReason and stacktrace on a failure). With `fetch_next`, the script fetches the
    next job as moveToActive would, with `lock_duration` and `limiter`.
    """

    job_id: str
    now: int
    target: Target = "completed"
    value: str = "null"
    token: str = "tok"
    keep_jobs: Mapping[str, Any] | None = None
    attempts: int | None = None
    fields: Mapping[str, str] | None = None
    fetch_next: bool | None = None
    lock_duration: int | None = None
    limiter: Mapping[str, int] | None = None
    max_metrics_size: int | None = None


@dataclass(frozen=True)
class RetryJob:
    """Job.retry right after a failure with attempts left and no backoff (retryJob-11)."""

    job_id: str
    now: int
    token: str = "tok"
    lifo: bool | None = None
    fields: Mapping[str, str] | None = None


@dataclass(frozen=True)
class ExtendLock:
    """Renew one lock (extendLock-2): 1 when the token holds it, else 0."""

    job_id: str
    token: str
    duration: int


@dataclass(frozen=True)
class ExtendLocks:
    """Renew many locks (extendLocks-1): the ids whose lock was not renewed."""

    job_ids: Sequence[str]
    tokens: Sequence[str]
    duration: int


@dataclass(frozen=True)
class ReleaseLock:
    """Delete a lock the token holds (releaseLock-1): 1 or 0."""

    job_id: str
    token: str


@dataclass(frozen=True)
class MoveStalledJobsToWait:
    """One stall check at `now` (moveStalledJobsToWait-9): the ids found stalled."""

    now: int
    max_stalled_count: int = 1
    stalled_interval: int = 30000


@dataclass(frozen=True)
class MoveJobFromActiveToWait:
    """A rate-limited worker hands its job back (moveJobFromActiveToWait-9): the limiter's
    PTTL, or 0."""

    job_id: str
    token: str = "tok"


@dataclass(frozen=True)
class GetRateLimitTtl:
    """Queue.getRateLimitTtl(maxJobs) (getRateLimitTtl-2)."""

    max_jobs: int = 0


@dataclass(frozen=True)
class RemoveDeduplicationKey:
    """Job.removeDeduplicationKey (removeDeduplicationKey-1): 1 when the key named this job."""

    deduplication_id: str
    job_id: str


@dataclass(frozen=True)
class RemoveJob:
    """Job.remove (removeJob-2), with its children unless `remove_children` is false."""

    job_id: str
    remove_children: bool | None = None


@dataclass(frozen=True)
class UpdateProgress:
    """Job.updateProgress(progress) (updateProgress-3); `progress` is any JSON value."""

    job_id: str
    progress: Any


@dataclass(frozen=True)
class UpdateData:
    """Job.updateData(data) (updateData-1); `data` is any JSON value."""

    job_id: str
    data: Any


@dataclass(frozen=True)
class AddLog:
    """Job.log(row) with the job's keepLogs (addLog-2): the list's new length."""

    job_id: str
    row: str
    keep_logs: int | None = None


@dataclass(frozen=True)
class Pttl:
    """A PTTL read back from Redis: the model knows its upper bound only."""

    bound: int


@dataclass(frozen=True)
class MoveToWaitingChildren:
    """Job.moveToWaitingChildren(token, {child}) at `now` (moveToWaitingChildren-7): an active
    job that still has children pending (or the one `child`, `{id, queue}`, pending) leaves
    active for waiting-children, scored `now`. 0 moved, 1 nothing pending (nothing written),
    -1 no job, -9 a failed child, then the lock (-2, -6) and -3 not active."""

    job_id: str
    now: int
    token: str = "tok"
    child: Mapping[str, str] | None = None


@dataclass(frozen=True)
class GetDependencyCounts:
    """Job.getDependenciesCount (getDependencyCounts-4): for each of `types` in order, the
    count of `processed` (HLEN :processed), `unprocessed` (SCARD :dependencies), `ignored`
    (HLEN :failed) or `failed` (ZCARD :unsuccessful)."""

    job_id: str
    types: Sequence[str] = ("processed", "unprocessed", "ignored", "failed")


@dataclass(frozen=True)
class RemoveChildDependency:
    """Job.removeChildDependency (removeChildDependency-1): the job leaves its parent's
    dependencies and forgets the parent (0); 1 when it was not a dependency, -1 no job, -5 no
    parent. `parent_key` is `<queue>:<id>`."""

    job_id: str
    parent_key: str


@dataclass(frozen=True)
class RemoveUnprocessedChildren:
    """Job.removeUnprocessedChildren (removeUnprocessedChildren-2): the job's pending
    children are removed, with their own children; a locked or failed child stays. The
    script answers nothing (null)."""

    job_id: str


#: The flow ops of a job (adapter protocol version 3).
FLOW_JOB_OPS: dict[str, type] = {
    "moveToWaitingChildren": MoveToWaitingChildren,
    "getDependencyCounts": GetDependencyCounts,
    "removeChildDependency": RemoveChildDependency,
    "removeUnprocessedChildren": RemoveUnprocessedChildren,
}

WORKER_OPS: dict[str, type] = {
    "moveToFinished": MoveToFinished,
    "retryJob": RetryJob,
    "extendLock": ExtendLock,
    "extendLocks": ExtendLocks,
    "releaseLock": ReleaseLock,
    "moveStalledJobsToWait": MoveStalledJobsToWait,
    "moveJobFromActiveToWait": MoveJobFromActiveToWait,
    "getRateLimitTtl": GetRateLimitTtl,
    "removeDeduplicationKey": RemoveDeduplicationKey,
    "removeJob": RemoveJob,
    "updateProgress": UpdateProgress,
    "updateData": UpdateData,
    "addLog": AddLog,
}
#: Vector spelling of the fields whose Python name differs.
WORKER_FIELDS = {
    "keep_jobs": "keepJobs", "fetch_next": "fetchNext", "max_metrics_size": "maxMetricsSize",
    "job_ids": "jobIds", "max_stalled_count": "maxStalledCount",
    "stalled_interval": "stalledInterval", "max_jobs": "maxJobs",
    "deduplication_id": "deduplicationId", "remove_children": "removeChildren",
    "keep_logs": "keepLogs", "parent_key": "parentKey",
}


def result_form(value: Any) -> Any:
    """A result in vector form: each `Pttl` as `{pttl: bound}`, in lists and maps too."""
    if isinstance(value, Pttl):
        return {"pttl": value.bound}
    if isinstance(value, list):
        return [result_form(item) for item in value]
    if isinstance(value, dict):
        return {key: result_form(item) for key, item in value.items()}
    return value


def result_matches(want: Any, got: Any) -> bool:
    """Whether an actual result matches a vector's: `{pttl: N}` takes any integer in (0, N]."""
    if isinstance(want, Mapping) and set(want) == {"pttl"}:
        return type(got) is int and 0 < got <= want["pttl"]
    if isinstance(want, Mapping):
        return isinstance(got, Mapping) and set(want) == set(got) and all(
            result_matches(want[key], got[key]) for key in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(
            result_matches(w, g) for w, g in zip(want, got, strict=True))
    return bool(want == got)
