"""The queue getters' script calls for `scripts:DIR`: KEYS layouts and ARGV as npm bullmq
6.7.0's client sends them (its redis-queue-backend: getCounts, getCountsPerPriority, getState,
getRanges, isFinished, isJobInList, isMaxed, getMetrics), and their replies as the ops'
results (`reference_impl.getter_ops`).

The empty suffix is the queue's own prefix (`bull:<queue>:`), which getCounts and getRanges
take as KEYS[1] and extend with each state name. `{list}` and `{type}` are filled per call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.candidates.scripts.worker_calls import Caller
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
    IsFinished: _finished,
    IsJobInList: _in_list,
    IsMaxed: _maxed,
    GetMetrics: _metrics,
}


def normalized(op: Any, reply: Any) -> Result:
    """A getter's decoded reply is its result as it came: counts, names, id lists and codes
    need no reshaping, and nil stays None."""
    return reply  # type: ignore[no-any-return]
