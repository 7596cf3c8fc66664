"""The queue's maintenance calls: the scripts an admin action runs (drain, clean, obliterate,
retry or promote in bulk, reprocess a finished job, save a stack trace, remove orphaned jobs).
Each op mirrors one script call as the Node client makes it, with its clock passed in; the
vectors give the script's own arguments (a client's loops, such as obliterate's until it
answers 0, are the client's).

Normalized results: `Drain` None (the script returns nothing); `CleanJobsInSet` the ids it
deleted, in the order it deleted them; `Obliterate` 0 done, 1 more to do, -1 not paused, -2
active jobs without force; `MoveJobsToWait` 0 done, 1 more to move; `ReprocessJob` 1, -1 no
job, -3 not in the state named; `SaveStacktrace` 0, -1 no job; `RemoveOrphanedJobs` how many
jobs it deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Drain:
    """Queue.drain(delayed) (drain-5): every job in wait, a legacy paused list and
    prioritized, and in delayed when `delayed`, deleted with its keys; a job scheduler's
    current iteration is spared. No event."""

    delayed: bool = False


@dataclass(frozen=True)
class CleanJobsInSet:
    """Queue.clean(grace, limit, type) (cleanJobsInSet-3): the jobs of `set` (wait, paused,
    active, delayed, prioritized, completed or failed) older than `timestamp` (the client's
    now - grace), at most `limit` (0: all), deleted with their keys, and one `cleaned` event.
    A finished set is read by score (finishedOn); the others by the first of the job's
    finishedOn, processedOn, timestamp it has, as text. Locked active jobs and a scheduler's
    current iteration stay."""

    set: str
    timestamp: int
    limit: int = 0


@dataclass(frozen=True)
class Obliterate:
    """Queue.obliterate({force, count}) (obliterate-2), one call: on a paused queue, up to
    `count` jobs at a time from active (only with `force`), delayed, the schedulers, completed,
    wait, paused, prioritized and failed, then the queue's own keys once all fit."""

    count: int = 1000
    force: bool = False


@dataclass(frozen=True)
class MoveJobsToWait:
    """Queue.retryJobs({state, count, timestamp}) and Queue.promoteJobs({count})
    (moveJobsToWait-8): up to `count` jobs of `state` (failed, completed; delayed for
    promoteJobs, whose timestamp is Number.MAX_VALUE: None here) scored up to `timestamp`,
    LPUSHed to
    wait with a `waiting` event each; a finished job loses finishedOn, processedOn and its
    returnvalue or failedReason, and (from 6.3.15) a child goes back to its parent's
    dependencies."""

    state: str
    count: int = 1000
    timestamp: int | None = None


@dataclass(frozen=True)
class ReprocessJob:
    """Job.retry(state, opts) (reprocessJob-9; -8 before 6.3.5, -7 up to 6.3.15): a job of
    `state` (completed or failed) back to wait (RPUSH when `lifo`) or, from 6.3.15, to
    prioritized when it has a priority; it loses finishedOn, processedOn and its returnvalue
    or failedReason (and atm, ats on request), a child goes back to its parent's
    dependencies, and a `waiting` event."""

    job_id: str
    state: str
    lifo: bool = False
    reset_attempts_made: bool = False
    reset_attempts_started: bool = False


@dataclass(frozen=True)
class SaveStacktrace:
    """saveStacktrace-1: the job's stacktrace and failedReason fields (0), or -1 without the
    job."""

    job_id: str
    stacktrace: str
    failed_reason: str


@dataclass(frozen=True)
class RemoveOrphanedJobs:
    """Queue.removeOrphanedJobs' batch (removeOrphanedJobs-1): of the candidate `job_ids`
    (found by the client's SCAN), each that no state key of the queue holds (a list, sorted
    set or set among the client's key names) is deleted with its logs, dependencies,
    processed, failed, unsuccessful and lock keys."""

    job_ids: Sequence[str]


MaintenanceOp = (Drain | CleanJobsInSet | Obliterate | MoveJobsToWait | ReprocessJob
                 | SaveStacktrace | RemoveOrphanedJobs)

#: Vector spelling of each maintenance op.
MAINTENANCE_OPS: dict[str, type] = {
    "drain": Drain,
    "cleanJobsInSet": CleanJobsInSet,
    "obliterate": Obliterate,
    "moveJobsToWait": MoveJobsToWait,
    "reprocessJob": ReprocessJob,
    "saveStacktrace": SaveStacktrace,
    "removeOrphanedJobs": RemoveOrphanedJobs,
}
#: Vector spelling of the maintenance ops' fields, where it differs from the Python name.
MAINTENANCE_FIELDS = {
    "reset_attempts_made": "resetAttemptsMade", "reset_attempts_started": "resetAttemptsStarted",
    "failed_reason": "failedReason",
}
#: The key names the Node client passes removeOrphanedJobs as the queue's state keys: every
#: key of its key map but the prefix itself (QueueKeys.getKeys, npm 6.7.0).
ORPHAN_STATE_KEYS = ("active", "wait", "waiting-children", "paused", "id", "delayed",
                     "prioritized", "stalled-check", "completed", "failed", "stalled", "repeat",
                     "limiter", "meta", "events", "pc", "marker", "de")
#: The job sub-keys it deletes with an orphan.
ORPHAN_SUB_KEYS = ("logs", "dependencies", "processed", "failed", "unsuccessful", "lock")
