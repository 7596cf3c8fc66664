"""The worker half's script calls for `scripts:DIR`: KEYS layouts and ARGV as npm bullmq 6.7.0
and the pinned PyPI bullmq send them (docs/RESEARCH.md, the worker sections).

Layout suffixes in braces are filled per call: `{job}` is the job's own key, `{target}` the
finished set (`completed` or `failed`), `{dedup}` a deduplication id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import msgpack

from reference_impl.job_updates import client_json
from reference_impl.ops import Result
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetDependencyCounts,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    MoveToWaitingChildren,
    ReleaseLock,
    RemoveChildDependency,
    RemoveDeduplicationKey,
    RemoveJob,
    RemoveUnprocessedChildren,
    RetryJob,
    UpdateData,
    UpdateProgress,
)

#: KEYS of each worker-half script, by name (the file is `<name>-<len(keys)>.lua`).
WORKER_KEYS: dict[str, tuple[str, ...]] = {
    "moveToFinished": ("wait", "active", "prioritized", "events", "stalled", "limiter",
                       "delayed", "paused", "meta", "pc", "{target}", "{job}",
                       "metrics:{target}", "marker"),
    "retryJob": ("active", "wait", "paused", "{job}", "meta", "events", "delayed",
                 "prioritized", "pc", "marker", "stalled"),
    "extendLock": ("{job}:lock", "stalled"),
    "extendLocks": ("stalled",),
    "releaseLock": ("{job}:lock",),
    "moveStalledJobsToWait": ("stalled", "wait", "active", "stalled-check", "meta", "paused",
                              "marker", "events", "repeat"),
    "moveJobFromActiveToWait": ("active", "wait", "stalled", "paused", "meta", "limiter",
                                "prioritized", "marker", "events"),
    "getRateLimitTtl": ("limiter", "meta"),
    "removeDeduplicationKey": ("de:{dedup}",),
    "removeJob": ("{job}", "repeat"),
    "updateProgress": ("{job}", "events", "meta"),
    "updateData": ("{job}",),
    "addLog": ("{job}", "{job}:logs"),
    "moveToWaitingChildren": ("active", "waiting-children", "{job}", "{job}:dependencies",
                              "{job}:unsuccessful", "stalled", "events"),
    "getDependencyCounts": ("{job}:processed", "{job}:dependencies", "{job}:failed",
                            "{job}:unsuccessful"),
    # KEYS[1] is BASE itself (the script's "key prefix").
    "removeChildDependency": ("",),
    "removeUnprocessedChildren": ("{job}", "meta"),
}
#: The default fetch-next lock, and the keepJobs a client sends for "keep everything".
LOCK_DURATION = 30000
KEEP_ALL = {"count": -1}


class Caller(Protocol):
    """Runs one named script of the directory with KEYS filled from `fill`."""

    def __call__(self, name: str, args: list[Any], fill: Mapping[str, str]) -> Any:
        """The raw Redis reply."""
        ...


def pack(value: Any) -> bytes:
    """msgpack as the clients send it (str as str, bytes as bin)."""
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def packed_fields(fields: Mapping[str, str] | None) -> bytes | str:
    """Job fields as the msgpack flat list `[field, value, ...]`, or "" for none."""
    if not fields:
        return ""
    return pack([item for pair in fields.items() for item in pair])


def worker_opts(token: str, lock_duration: int | None, limiter: Mapping[str, int] | None,
                name: str | None = None) -> dict[str, Any]:
    """The fetch options map of moveToActive and every fetch-next."""
    opts: dict[str, Any] = {"token": token, "lockDuration": lock_duration or LOCK_DURATION}
    if limiter is not None:
        opts["limiter"] = dict(limiter)
    if name is not None:
        opts["name"] = name
    return opts


def _finish(call: Caller, base: str, op: MoveToFinished) -> Any:
    opts = worker_opts(op.token, op.lock_duration, op.limiter)
    opts["keepJobs"] = dict(op.keep_jobs) if op.keep_jobs is not None else KEEP_ALL
    opts["attempts"] = op.attempts if op.attempts is not None else 0
    opts["maxMetricsSize"] = op.max_metrics_size if op.max_metrics_size is not None else ""
    field = "returnvalue" if op.target == "completed" else "failedReason"
    args = [op.job_id, op.now, field, op.value, op.target, "1" if op.fetch_next else "0", base,
            pack(opts), packed_fields(op.fields)]
    return call("moveToFinished", args, {"job": op.job_id, "target": op.target})


def _retry(call: Caller, base: str, op: RetryJob) -> Any:
    args: list[Any] = [base, op.now, "RPUSH" if op.lifo else "LPUSH", op.job_id, op.token]
    if op.fields:
        args.append(packed_fields(op.fields))
    return call("retryJob", args, {"job": op.job_id})


def _extend(call: Caller, base: str, op: ExtendLock) -> Any:
    return call("extendLock", [op.token, op.duration, op.job_id], {"job": op.job_id})


def _extend_many(call: Caller, base: str, op: ExtendLocks) -> Any:
    args = [base, pack(list(op.tokens)), pack(list(op.job_ids)), op.duration]
    return call("extendLocks", args, {})


def _release(call: Caller, base: str, op: ReleaseLock) -> Any:
    return call("releaseLock", [op.token, LOCK_DURATION], {"job": op.job_id})


def _stalled(call: Caller, base: str, op: MoveStalledJobsToWait) -> Any:
    args = [op.max_stalled_count, base, op.now, op.stalled_interval]
    return call("moveStalledJobsToWait", args, {})


def _back_to_wait(call: Caller, base: str, op: MoveJobFromActiveToWait) -> Any:
    return call("moveJobFromActiveToWait", [op.job_id, op.token, base + op.job_id], {})


def _rate_limit_ttl(call: Caller, base: str, op: GetRateLimitTtl) -> Any:
    return call("getRateLimitTtl", [op.max_jobs], {})


def _remove_dedup(call: Caller, base: str, op: RemoveDeduplicationKey) -> Any:
    return call("removeDeduplicationKey", [op.job_id], {"dedup": op.deduplication_id})


def _remove(call: Caller, base: str, op: RemoveJob) -> Any:
    children = "0" if op.remove_children is False else "1"
    return call("removeJob", [op.job_id, children, base], {"job": op.job_id})


def _progress(call: Caller, base: str, op: UpdateProgress) -> Any:
    return call("updateProgress", [op.job_id, client_json(op.progress)], {"job": op.job_id})


def _data(call: Caller, base: str, op: UpdateData) -> Any:
    return call("updateData", [client_json(op.data)], {"job": op.job_id})


def _log(call: Caller, base: str, op: AddLog) -> Any:
    keep = op.keep_logs if op.keep_logs else ""
    return call("addLog", [op.job_id, op.row, keep], {"job": op.job_id})


def _wait_children(call: Caller, base: str, op: MoveToWaitingChildren) -> Any:
    child = f"{op.child['queue']}:{op.child['id']}" if op.child else ""
    args = [op.token, child, str(op.now), op.job_id, base]
    return call("moveToWaitingChildren", args, {"job": op.job_id})


def _dependency_counts(call: Caller, base: str, op: GetDependencyCounts) -> Any:
    return call("getDependencyCounts", list(op.types), {"job": op.job_id})


def _remove_child(call: Caller, base: str, op: RemoveChildDependency) -> Any:
    return call("removeChildDependency", [base + op.job_id, op.parent_key], {})


def _remove_unprocessed(call: Caller, base: str, op: RemoveUnprocessedChildren) -> Any:
    return call("removeUnprocessedChildren", [base, op.job_id], {"job": op.job_id})


CALLS: dict[type, Callable[[Caller, str, Any], Any]] = {
    MoveToFinished: _finish,
    RetryJob: _retry,
    ExtendLock: _extend,
    ExtendLocks: _extend_many,
    ReleaseLock: _release,
    MoveStalledJobsToWait: _stalled,
    MoveJobFromActiveToWait: _back_to_wait,
    GetRateLimitTtl: _rate_limit_ttl,
    RemoveDeduplicationKey: _remove_dedup,
    RemoveJob: _remove,
    UpdateProgress: _progress,
    UpdateData: _data,
    AddLog: _log,
    MoveToWaitingChildren: _wait_children,
    GetDependencyCounts: _dependency_counts,
    RemoveChildDependency: _remove_child,
    RemoveUnprocessedChildren: _remove_unprocessed,
}


def normalized(op: Any, reply: Any) -> Result:
    """A worker script's reply as the op's result: ids as strings, a fetch-next 4-array as
    `{job, ttl, next}` (the caller's `fetched_or_raw`), anything else as it came."""
    if isinstance(op, ExtendLocks | MoveStalledJobsToWait) and isinstance(reply, list):
        return [str(item) for item in reply]
    return reply  # type: ignore[no-any-return]
