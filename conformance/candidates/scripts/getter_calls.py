"""The queue getters' script calls for `scripts:DIR`: KEYS layouts and ARGV as npm bullmq
6.7.0's client sends them (its redis-queue-backend: getCounts, getCountsPerPriority, getState,
getRanges, getJobs, paginate, isFinished, isJobInList, isMaxed, getMetrics), and their replies
as the ops' results (`reference_impl.getter_ops`).

The empty suffix is the queue's own prefix (`bull:<queue>:`), which getCounts, getRanges and
getJobs take as KEYS[1] and extend with each state name. `{list}`, `{type}` and `{key}` are
filled per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.candidates.scripts.call import hash_fields
from conformance.candidates.scripts.worker_calls import Caller
from reference_impl.getter_ops import (
    GET_JOBS_MAX_ITERATIONS,
    PAGINATE_MAX_ITERATIONS,
    GetCounts,
    GetCountsPerPriority,
    GetJobs,
    GetMetrics,
    GetRanges,
    GetState,
    IsFinished,
    IsJobInList,
    IsMaxed,
    Paginate,
)
from reference_impl.getters import canonical_page
from reference_impl.ops import Result

_STATE_KEYS = ("completed", "failed", "delayed", "active", "wait", "paused",
               "waiting-children", "prioritized")

#: KEYS of each getter script, by name (the file is `<name>-<len(keys)>.lua`).
GETTER_KEYS: dict[str, tuple[str, ...]] = {
    "getCounts": ("",),
    "getCountsPerPriority": ("wait", "prioritized"),
    "getState": _STATE_KEYS,
    "getStateV2": _STATE_KEYS,
    "getRanges": ("",),
    "getJobs": ("",),
    "paginate": ("{key}",),
    "isFinished": ("completed", "failed", "{job}"),
    "isJobInList": ("{list}",),
    "isMaxed": ("meta", "active"),
    "getMetrics": ("metrics:{type}", "metrics:{type}:data"),
}


def _counts(call: Caller, base: str, op: GetCounts) -> Any:
    cutoff = [] if op.cutoff is None else [op.cutoff]
    return call("getCounts", [*cutoff, *op.types], {})


def _per_priority(call: Caller, base: str, op: GetCountsPerPriority) -> Any:
    return call("getCountsPerPriority", list(op.priorities), {})


def _state(call: Caller, base: str, op: GetState) -> Any:
    return call("getState" if op.legacy else "getStateV2", [op.job_id], {})


def _ranges(call: Caller, base: str, op: GetRanges) -> Any:
    return call("getRanges", [op.start, op.end, "1" if op.asc else "0", *op.types], {})


def _jobs(call: Caller, base: str, op: GetJobs) -> Any:
    return call("getJobs", [op.start, op.end, "1" if op.asc else "0", GET_JOBS_MAX_ITERATIONS,
                            *op.types], {})


def _paginate(call: Caller, base: str, op: Paginate) -> Any:
    # The client's first call of a page: cursor "0"; it passes 1 to fetch jobs, else nothing
    # (the script fetches whenever ARGV[6] is there).
    fetch = [1] if op.fetch_jobs else []
    return call("paginate", [op.start, op.end, "0", op.offset, PAGINATE_MAX_ITERATIONS, *fetch],
                {"key": op.key})


def _finished(call: Caller, base: str, op: IsFinished) -> Any:
    return call("isFinished", [op.job_id, "1" if op.return_value else ""], {"job": op.job_id})


def _in_list(call: Caller, base: str, op: IsJobInList) -> Any:
    return call("isJobInList", [op.job_id], {"list": op.list_name})


def _maxed(call: Caller, base: str, op: IsMaxed) -> Any:
    return call("isMaxed", [], {})


def _metrics(call: Caller, base: str, op: GetMetrics) -> Any:
    return call("getMetrics", [op.start, op.end], {"type": op.type})


CALLS: dict[type, Callable[[Caller, str, Any], Any]] = {
    GetCounts: _counts,
    GetCountsPerPriority: _per_priority,
    GetState: _state,
    GetRanges: _ranges,
    GetJobs: _jobs,
    Paginate: _paginate,
    IsFinished: _finished,
    IsJobInList: _in_list,
    IsMaxed: _maxed,
    GetMetrics: _metrics,
}


def _page(reply: list[Any]) -> list[Any]:
    """paginate's reply with each job as a mapping, a set's members in text order."""
    if len(reply) < 5:
        return reply
    cursor, offset, items, total, jobs = reply
    return canonical_page([cursor, offset, items, total, [hash_fields(job) for job in jobs]])


def normalized(op: Any, reply: Any) -> Result:
    """A getter's decoded reply as its result: counts, names, id lists and codes as they came
    (nil as None); getJobs' and paginate's hashes as mappings. A reply of another shape (a
    broken script's) is shown as it came."""
    try:
        if isinstance(op, GetJobs):
            return [[[job_id, hash_fields(flat)] for job_id, flat in entries]
                    for entries in reply]
        if isinstance(op, Paginate):
            return _page(reply)
    except (TypeError, ValueError):
        pass  # not the script's shape: an odd field list, a scalar, nil
    return reply  # type: ignore[no-any-return]
