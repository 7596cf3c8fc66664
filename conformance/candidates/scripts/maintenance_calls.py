"""The maintenance calls' scripts for `scripts:DIR`: KEYS layouts and ARGV as npm bullmq
6.7.0's client sends them (its redis-queue-backend: drain, cleanJobsByState, obliterate,
retryFinishedJobs and promoteJobs, retryFinishedJob, removeOrphanedJobsBatch; saveStacktrace as
the script states it, which no 6.7.0 client code calls), and their replies as the ops' results
(`reference_impl.maintenance_ops`).

`{set}` and `{job}` are filled per call; the empty suffix is the queue's prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.candidates.scripts.worker_calls import Caller
from reference_impl.maintenance_ops import (
    ORPHAN_STATE_KEYS,
    ORPHAN_SUB_KEYS,
    CleanJobsInSet,
    Drain,
    MoveJobsToWait,
    Obliterate,
    RemoveOrphanedJobs,
    ReprocessJob,
    SaveStacktrace,
)
from reference_impl.ops import Result

#: What Node sends for promoteJobs' timestamp: String(Number.MAX_VALUE).
MAX_VALUE_TEXT = "1.7976931348623157e+308"

#: KEYS of each maintenance script, by name (the file is `<name>-<len(keys)>.lua`).
MAINTENANCE_KEYS: dict[str, tuple[str, ...]] = {
    "drain": ("wait", "paused", "delayed", "prioritized", "repeat"),
    "cleanJobsInSet": ("{set}", "events", "repeat"),
    "obliterate": ("meta", ""),
    "moveJobsToWait": ("", "events", "{set}", "wait", "paused", "meta", "active", "marker"),
    "reprocessJob": ("{job}", "events", "{set}", "wait", "meta", "active", "marker",
                     "prioritized", "pc"),
    "saveStacktrace": ("{job}",),
    "removeOrphanedJobs": ("",),
}
#: reprocessJob before 6.3.15: -8 up to 6.3.5 (with `paused`), then -7.
OLDER_REPROCESS_KEYS = (
    ("{job}", "events", "{set}", "wait", "meta", "paused", "active", "marker"),
    ("{job}", "events", "{set}", "wait", "meta", "active", "marker"),
)


def _drain(call: Caller, base: str, op: Drain) -> Any:
    return call("drain", [base, "1" if op.delayed else "0"], {})


def _clean(call: Caller, base: str, op: CleanJobsInSet) -> Any:
    return call("cleanJobsInSet", [base, op.timestamp, op.limit, op.set], {"set": op.set})


def _obliterate(call: Caller, base: str, op: Obliterate) -> Any:
    # ioredis sends the client's null as an empty string, which the script reads as "no force".
    return call("obliterate", [op.count, "force" if op.force else ""], {})


def _to_wait(call: Caller, base: str, op: MoveJobsToWait) -> Any:
    timestamp = MAX_VALUE_TEXT if op.timestamp is None else op.timestamp
    return call("moveJobsToWait", [op.count, timestamp, op.state], {"set": op.state})


def _reprocess(call: Caller, base: str, op: ReprocessJob) -> Any:
    args = [op.job_id, "RPUSH" if op.lifo else "LPUSH",
            "failedReason" if op.state == "failed" else "returnvalue", op.state,
            "1" if op.reset_attempts_made else "0", "1" if op.reset_attempts_started else "0"]
    return call("reprocessJob", args, {"job": op.job_id, "set": op.state})


def _stacktrace(call: Caller, base: str, op: SaveStacktrace) -> Any:
    return call("saveStacktrace", [op.stacktrace, op.failed_reason], {"job": op.job_id})


def _orphans(call: Caller, base: str, op: RemoveOrphanedJobs) -> Any:
    args = [len(ORPHAN_STATE_KEYS), *ORPHAN_STATE_KEYS, len(ORPHAN_SUB_KEYS), *ORPHAN_SUB_KEYS,
            *op.job_ids]
    return call("removeOrphanedJobs", args, {})


CALLS: dict[type, Callable[[Caller, str, Any], Any]] = {
    Drain: _drain,
    CleanJobsInSet: _clean,
    Obliterate: _obliterate,
    MoveJobsToWait: _to_wait,
    ReprocessJob: _reprocess,
    SaveStacktrace: _stacktrace,
    RemoveOrphanedJobs: _orphans,
}


def normalized(op: Any, reply: Any) -> Result:
    """A maintenance script's decoded reply is its result as it came: codes, counts, the
    cleaned ids, and drain's nil as None."""
    return reply  # type: ignore[no-any-return]
