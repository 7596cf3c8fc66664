"""Removing a job and updating one: removeJob-2 (no children), updateProgress-3, updateData-1,
addLog-2."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reference_impl.queue_core import JOB_NOT_EXIST
from reference_impl.store import JsonText
from reference_impl.worker_ops import AddLog, RemoveJob, UpdateData, UpdateProgress

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore

JOB_BELONGS_TO_SCHEDULER = -8
#: The keys a removed or discarded job leaves behind, as suffixes after `<id>`.
JOB_KEY_SUFFIXES = ("", ":logs", ":dependencies", ":processed", ":failed", ":unsuccessful")
#: Where removeJob looks for the job, in order, and the state its event names.
ZSET_STATES = ("completed", "waiting-children", "delayed", "failed", "prioritized")
LIST_STATES = ("wait", "paused", "active")


def client_json(value: object) -> str:
    """JSON as the Node client sends it (JSON.stringify: compact, keys in order given)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def remove_job_keys(model: QueueCore, job_id: str) -> bool:
    """DEL the job hash and the keys hanging off it (never `:lock`); True if any existed."""
    found = False
    for suffix in JOB_KEY_SUFFIXES:
        found |= model.store.exists(job_id + suffix)
        model.store.delete(job_id + suffix)
    return found


def _scheduler_iteration(model: QueueCore, job_id: str) -> bool:
    scheduler = model.store.hget(job_id, "rjk")
    if not isinstance(scheduler, str):
        return False
    current = model.store.zscore("repeat", scheduler)
    return current is not None and job_id == f"repeat:{scheduler}:{current}"


def remove_job(model: QueueCore, op: RemoveJob) -> int:
    """removeJob-2 for a job without children or parent: -8 for a scheduler's current
    iteration, 0 while locked, else 1 (a missing job too, with no event)."""
    if _scheduler_iteration(model, op.job_id):
        return JOB_BELONGS_TO_SCHEDULER
    if model.store.exists(f"{op.job_id}:lock"):
        return 0
    state = "unknown"
    for name in ZSET_STATES:
        if model.store.zrem(name, op.job_id):
            state = name
            break
    else:
        for name in LIST_STATES:
            if model.store.lrem(name, 1, op.job_id):
                state = name
                break
    dedup = model.store.hget(op.job_id, "deid")
    if isinstance(dedup, str):
        if model.store.get(f"de:{dedup}") == op.job_id:
            model.store.delete(f"de:{dedup}")
        model.store.delete(f"dn:{dedup}")
    if remove_job_keys(model, op.job_id):
        model.max_events()
        model.event("event", "removed", "jobId", op.job_id, "prev", state)
    return 1


def update_progress(model: QueueCore, op: UpdateProgress) -> int:
    """updateProgress-3: the JSON progress in the hash and a trimmed `progress` event."""
    if not model.store.exists(op.job_id):
        return JOB_NOT_EXIST
    text = client_json(op.progress)
    model.store.hset(op.job_id, "progress", JsonText(op.progress))
    model.max_events()
    model.event("event", "progress", "jobId", op.job_id, "data", text)
    return 0


def update_data(model: QueueCore, op: UpdateData) -> int:
    """updateData-1: the JSON data in the hash, no event."""
    if not model.store.exists(op.job_id):
        return JOB_NOT_EXIST
    model.store.hset(op.job_id, "data", JsonText(op.data))
    return 0


def add_log(model: QueueCore, op: AddLog) -> int:
    """addLog-2: RPUSH the row; with keepLogs k, keep the last k. The list's length after."""
    if not model.store.exists(op.job_id):
        return JOB_NOT_EXIST
    logs = f"{op.job_id}:logs"
    model.store.rpush(logs, op.row)
    if op.keep_logs:
        model.store.ltrim(logs, -op.keep_logs, -1)
    return model.store.llen(logs)
