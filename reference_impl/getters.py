"""The queue's getters (`reference_impl.getter_ops`) on the model's store, as the 6.x scripts
answer them. Index arithmetic follows Redis's LRANGE and ZRANGE (`redis_slice`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from reference_impl.getter_ops import (
    GET_JOBS_MAX_ITERATIONS,
    PAGINATE_COUNT,
    GetCounts,
    GetCountsPerPriority,
    GetJob,
    GetJobLogs,
    GetJobs,
    GetMetrics,
    GetRanges,
    GetState,
    IsFinished,
    IsJobInList,
    IsMaxed,
    Paginate,
)
from reference_impl.keys import QUEUE2_REF, QUEUE_REF
from reference_impl.queue_core import LEGACY_MARKER, QueueCore
from reference_impl.store import Hash, List, Score, Set, ZSet, hash_text

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


def _hash_reply(model: QueueCore, suffix: str) -> dict[str, str]:
    """HGETALL as a script returns it: every field's text."""
    return {name: hash_text(value) for name, value in model.store.hgetall(suffix).items()}


def get_jobs(model: QueueCore, op: GetJobs) -> list[list[list[Any]]]:
    """getJobs-1 (see `GetJobs`)."""
    return [_jobs_of(model, state, op) for state in op.types]


def _jobs_of(model: QueueCore, state: str, op: GetJobs) -> list[list[Any]]:
    left = drop_legacy_marker(model, state)
    is_list = state in LIST_STATES
    # The script guards an ascending bounded read with the list's length (a window past the
    # end answers nothing); LRANGE's own index rules give the same answer.
    length = None
    if op.asc and is_list and op.start >= 0 and op.end >= 0:
        length = left if left is not None else len(_list(model, state))

    def ids(start: int, end: int) -> list[str]:
        if not is_list:
            members = [member for member, _ in _zset(model, state)]
            return redis_slice(members if op.asc else members[::-1], start, end)
        if not op.asc:
            return redis_slice(_list(model, state), start, end)
        if length is not None and start >= length:
            return []
        window = _list_range(_list(model, state), start, end, asc=True)
        return window[::-1]  # the script reverses it: the oldest job first

    entries: list[list[Any]] = []

    def take(job_id: str) -> None:
        fields = _hash_reply(model, job_id)
        if fields:
            entries.append([job_id, fields])

    if op.start < 0 or op.end < 0:
        for job_id in ids(op.start, op.end):
            take(job_id)
        return entries
    needed = op.end - op.start + 1
    cursor = op.start
    for _ in range(GET_JOBS_MAX_ITERATIONS):
        if len(entries) >= needed:
            break
        window = ids(cursor, cursor + needed - 1)
        if not window:
            break
        for job_id in window:
            if len(entries) >= needed:
                break
            take(job_id)
        cursor += len(window)
    return entries


def _scan_order(members: set[str]) -> list[str]:
    """A small set's members in the order `canonical_page` puts a page of a set in: a set's
    order is the server's (hash order, or insertion order in a listpack), so no vector may
    depend on which members a partial page takes."""
    return sorted(members)


def canonical_page(result: list[Any]) -> list[Any]:
    """A paginate result (`reference_impl.getter_ops.Paginate`) with a set's members, and the
    jobs beside them, in text order: which order SSCAN gives is the server's (an intset's, a
    listpack's, a hash table's), not the protocol's. A hash's pairs keep theirs: HSCAN of a
    small hash is its fields' order on every server. Anything else is left as it is."""
    if len(result) != 5:
        return result
    cursor, offset, items, total, jobs = result
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        return result  # a hash's pairs, or another shape (shown as it came)
    order = sorted(range(len(items)), key=lambda i: items[i])
    return [cursor, offset, [items[i] for i in order], total,
            [jobs[i] for i in order] if len(jobs) == len(items) else jobs]


def _full_key_suffix(key: str) -> str | None:
    """The suffix of a full key of the vector's own queue (`<q>:<suffix>`); None for a key
    that is no queue's (HGETALL finds nothing there)."""
    if key.startswith(f"{QUEUE2_REF}:"):
        raise NotImplementedError("the model holds one queue's keys: a job of <q2> is unread")
    head = f"{QUEUE_REF}:"
    return key[len(head):] if key.startswith(head) else None


def paginate(model: QueueCore, op: Paginate) -> list[Any]:
    """paginate-1 (see `Paginate`). The key is small (at most `PAGINATE_COUNT` items), so one
    scan returns it whole and answers cursor "0"."""
    value = model.store.keys.get(op.key)
    if value is None:
        return [0, 0, [], 0]
    if isinstance(value, Hash):
        items: list[Any] = [[name, hash_text(text)] for name, text in value.fields.items()]
        names = [name for name, _ in value.fields.items()]
    elif isinstance(value, Set):
        names = _scan_order(value.members)
        items = list(names)
    else:
        raise NotImplementedError("paginate answers an error for a key that is no set or hash")
    if len(items) > PAGINATE_COUNT:
        raise NotImplementedError("a key scanned in several chunks comes back in server order")
    total = len(items)
    end = total if op.end == -1 else op.end
    page_start, page_end = op.start, op.start + (end - op.start + 1)
    offset, picked = op.offset, []
    chunk_end = offset + total
    if chunk_end < page_start:
        offset = chunk_end
    elif offset <= page_end:
        for index in range(total):
            if offset >= page_end:
                break
            if offset >= page_start:
                picked.append(index)
            offset += 1
    if isinstance(value, Set) and 0 < len(picked) < total and total > 1:
        raise NotImplementedError("which members a partial page of a set takes is the server's")
    jobs = []
    if op.fetch_jobs:
        for index in picked:
            suffix = _full_key_suffix(names[index])
            jobs.append({} if suffix is None else _hash_reply(model, suffix))
    return ["0", offset, [items[index] for index in picked], total, jobs]


def get_job(model: QueueCore, op: GetJob) -> dict[str, str] | None:
    """Queue.getJob's HGETALL (see `GetJob`)."""
    return _hash_reply(model, op.job_id) or None


def get_job_logs(model: QueueCore, op: GetJobLogs) -> dict[str, Any]:
    """Queue.getJobLogs' LRANGE and LLEN (see `GetJobLogs`)."""
    rows = _list(model, f"{op.job_id}:logs")
    if op.asc:
        logs = redis_slice(rows, op.start, op.end)
    else:
        logs = redis_slice(rows, -(op.end + 1), -(op.start + 1))[::-1]
    return {"logs": logs, "count": len(rows)}
