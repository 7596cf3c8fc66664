"""The queue's getters (`reference_impl.getter_ops`) on the model's store, as the 6.x scripts
answer them. Index arithmetic follows Redis's LRANGE and ZRANGE (`redis_slice`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

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
from reference_impl.queue_core import LEGACY_MARKER, QueueCore
from reference_impl.store import Hash, List, Score, ZSet, hash_text

T = TypeVar("T")

#: The lists among the state names a client passes; every other name is a sorted set.
LIST_STATES = ("wait", "paused", "active")
#: The lists that may end in a legacy marker (5.x wrote "0:<ms>" into them).
MARKED_LISTS = ("wait", "paused")
#: A priority's band of `prioritized` scores: priority * 2^32 + the priority counter.
PRIORITY_BAND = 1 << 32
#: The low 12 bits of a delayed score order jobs within a millisecond.
DELAY_BITS = 0x1000


def redis_slice(items: Sequence[T], start: int, stop: int) -> list[T]:
    """items[start..stop], both inclusive, as LRANGE and ZRANGE count: negative indexes from
    the end, a start before the head read as 0, a stop past the tail as the tail."""
    length = len(items)
    if start < 0:
        start = max(0, start + length)
    if stop < 0:
        stop += length
    stop = min(stop, length - 1)
    return list(items[start:stop + 1]) if start <= stop else []


def _list(model: QueueCore, suffix: str) -> list[str]:
    value = model.store.keys.get(suffix)
    return list(value.items) if isinstance(value, List) else []


def _zset(model: QueueCore, suffix: str) -> list[tuple[str, Score]]:
    value = model.store.keys.get(suffix)
    return value.ordered() if isinstance(value, ZSet) else []


def drop_legacy_marker(model: QueueCore, state: str) -> int | None:
    """The scripts' cleanup of a 5.x marker at the tail of `wait` or `paused`: when the last
    item starts with "0:", pop it if the list holds jobs too, and answer how many jobs that
    leaves (0 when the marker is alone: it stays). None when there is no marker to drop."""
    if state not in MARKED_LISTS:
        return None
    items = _list(model, state)
    if not items or not items[-1].startswith(LEGACY_MARKER):
        return None
    if len(items) > 1:
        model.store.rpop(state)
        return len(items) - 1
    return 0


def get_counts(model: QueueCore, op: GetCounts) -> list[int]:
    """getCounts-1 (see `GetCounts`)."""
    counts = []
    for state in op.types:
        left = drop_legacy_marker(model, state)
        if left is not None:
            counts.append(left)
        elif state in LIST_STATES:
            counts.append(len(_list(model, state)))
        elif state == "delayed" and op.cutoff is not None:
            # ZCOUNT -inf (cutoff * 0x1000 - 1): a job due at the cutoff itself is not counted.
            bound = op.cutoff * DELAY_BITS - 1
            counts.append(sum(1 for _, score in _zset(model, state) if score <= bound))
        else:
            counts.append(len(_zset(model, state)))
    return counts


def get_counts_per_priority(model: QueueCore, op: GetCountsPerPriority) -> list[int]:
    """getCountsPerPriority-2 (see `GetCountsPerPriority`)."""
    counts = []
    for priority in op.priorities:
        if priority == 0:
            counts.append(len(_list(model, "wait")))
        else:
            low, high = priority * PRIORITY_BAND, (priority + 1) * PRIORITY_BAND - 1
            counts.append(sum(1 for _, score in _zset(model, "prioritized")
                              if low <= score <= high))
    return counts


#: getState's checks in the scripts' order: the key, and the state it names.
STATE_ORDER = (("completed", "completed"), ("failed", "failed"), ("delayed", "delayed"),
               ("prioritized", "prioritized"), ("active", "active"), ("wait", "waiting"),
               ("paused", "waiting"), ("waiting-children", "waiting-children"))


def get_state(model: QueueCore, op: GetState) -> str:
    """getStateV2-8, or getState-8 (`legacy`): the two read the lists differently (LPOS, or
    LRANGE and a scan) and answer the same."""
    for key, state in STATE_ORDER:
        if key in LIST_STATES:
            held = op.job_id in _list(model, key)
        else:
            held = model.store.zscore(key, op.job_id) is not None
        if held:
            return state
    return "unknown"


def get_ranges(model: QueueCore, op: GetRanges) -> list[list[str]]:
    """getRanges-1 (see `GetRanges`)."""
    ranges: list[list[str]] = []
    for state in op.types:
        left = drop_legacy_marker(model, state)
        if left == 0:
            ranges.append([])  # the marker alone: no ids, and the marker stays
        elif state in LIST_STATES:
            ranges.append(_list_range(_list(model, state), op.start, op.end, op.asc))
        else:
            members = [member for member, _ in _zset(model, state)]
            if not op.asc:
                members.reverse()  # ZREVRANGE counts ranks from the highest score
            ranges.append(redis_slice(members, op.start, op.end))
    return ranges


def _list_range(items: list[str], start: int, end: int, asc: bool) -> list[str]:
    if not asc:
        return redis_slice(items, start, end)
    # The window counted from the tail; an index of -1 (to the end) reads as 0 (the head).
    tail_start = 0 if start == -1 else -(start + 1)
    tail_end = 0 if end == -1 else -(end + 1)
    return redis_slice(items, tail_end, tail_start)


def is_finished(model: QueueCore, op: IsFinished) -> int | list[Any]:
    """isFinished-3 (see `IsFinished`)."""
    if not model.store.exists(op.job_id):
        if op.return_value:
            raise NotImplementedError("the missing job's message names the full job key")
        return -1
    for code, key, field in ((1, "completed", "returnvalue"), (2, "failed", "failedReason")):
        if model.store.zscore(key, op.job_id) is not None:
            if not op.return_value:
                return code
            value = model.store.hget(op.job_id, field)
            return [code, None if value is None else hash_text(value)]
    return [0] if op.return_value else 0


def is_job_in_list(model: QueueCore, op: IsJobInList) -> int | None:
    """isJobInList-1: 1 when the list holds the id, else None (the script's nil)."""
    return 1 if op.job_id in _list(model, op.list_name) else None


def is_maxed(model: QueueCore, op: IsMaxed) -> int | None:
    """isMaxed-2: 1 when meta `concurrency` is set and the active jobs reach it, else None
    (the script returns Lua false, which Redis answers as nil)."""
    limit = model.store.hget("meta", "concurrency")
    if limit is None or len(_list(model, "active")) < int(hash_text(limit)):
        return None
    return 1


def get_metrics(model: QueueCore, op: GetMetrics) -> list[Any]:
    """getMetrics-2 (see `GetMetrics`)."""
    suffix = f"metrics:{op.type}"
    value = model.store.keys.get(suffix)
    fields = value.fields if isinstance(value, Hash) else {}
    meta = [None if fields.get(name) is None else hash_text(fields[name])
            for name in ("count", "prevTS", "prevCount")]
    points = _list(model, f"{suffix}:data")
    return [meta, redis_slice(points, op.start, op.end), len(points)]
