"""Legacy repeatable jobs (5.x): addRepeatableJob-2, updateRepeatableJobMillis-1 and
removeRepeatable-2/-3 on the model's keys (`reference_impl.repeatable_ops` has the ops, the
client's keys and the normalized results).

The scripts trust the keys the client computed: a port that hashes the options otherwise
stores another member, and its iterations get other job ids, so a Node worker and the port
each think the other's repeatable job is a different one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_impl import versions
from reference_impl.queue_core import lua_int_text
from reference_impl.repeatable_ops import (
    AddRepeatableJob,
    RemoveRepeatable,
    UpdateRepeatableJobMillis,
    concat_key,
    legacy_job_id_prefix,
    removal_member,
    repeat_key,
)
from reference_impl.schedulers import remove_delayed_iteration, remove_unparented_job

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore


def add_repeatable_job(model: QueueCore, op: AddRepeatableJob) -> str:
    """addRepeatableJob-2: the previous iteration of the repeat key, `repeat:<key>:<previous
    score>`, leaves delayed with its keys and its deduplication key (no event), unless (from
    5.13.2) the job of the new fire time exists; then the key, or the concatenated key when the
    queue still holds that one, is scored `next_millis` and its hash written over (HMSET: name
    and the options given; fields of an earlier add stay). Returns the key stored."""
    key, legacy = repeat_key(op), concat_key(op)
    store = model.store
    previous = store.zscore("repeat", key)
    if previous is not None:
        iteration = f"repeat:{key}:{lua_int_text(int(previous))}"
        next_exists = store.exists(f"repeat:{key}:{op.next_millis}")
        if store.zscore("delayed", iteration) is not None and not (
                next_exists and model.since(versions.REPEAT_NEXT_EXISTS)):
            remove_unparented_job(model, iteration)
            store.zrem("delayed", iteration)
    stored = legacy if store.zscore("repeat", legacy) is not None else key
    store.zadd("repeat", op.next_millis, stored)
    # HMSET in the script's order: name, tz, pattern, endDate, every
    fields = (("name", op.name), ("tz", op.tz), ("pattern", op.pattern),
              ("endDate", None if op.end_date is None else lua_int_text(op.end_date)),
              ("every", None if op.every is None else lua_int_text(op.every)))
    for name, value in fields:
        if value is not None:  # the script skips what msgpack left out
            store.hset(f"repeat:{stored}", name, value)
    return stored


def update_repeatable_job_millis(model: QueueCore, op: UpdateRepeatableJobMillis) -> str:
    """updateRepeatableJobMillis-1: the key (else the concatenated key) rescored to
    `next_millis` when the queue holds it; "" when it holds neither (a removed repeatable job
    stays removed)."""
    for member in (repeat_key(op), concat_key(op)):
        if model.store.zscore("repeat", member) is not None:
            model.store.zadd("repeat", op.next_millis, member)
            return member
    return ""


def remove_repeatable(model: QueueCore, op: RemoveRepeatable) -> int:
    """removeRepeatable: the concatenated key first (its hash stays), with its delayed
    iteration `<legacy prefix><score>` and a `removed` event; 0 when it was there. From
    5.10.0, else the repeat key, its hash (from 5.10.4), and its delayed iteration
    `repeat:<key>:<score>`. 1 when the queue holds neither. An iteration no longer delayed
    stays."""
    store = model.store
    full_keys = model.since(versions.REPEAT_KEY_HASH)
    legacy = removal_member(op) if full_keys else concat_key(op)
    remove_delayed_iteration(model, legacy_job_id_prefix(op), legacy, hash_only=not full_keys)
    if store.zrem("repeat", legacy):
        return 0
    if not full_keys:
        return 1
    key = repeat_key(op)
    remove_delayed_iteration(model, f"repeat:{key}:", key)
    if store.zrem("repeat", key):
        if model.since(versions.REPEAT_HASH_REMOVED):
            store.delete(f"repeat:{key}")
        return 0
    return 1

