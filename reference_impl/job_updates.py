"""Updating a job: updateProgress-3, updateData-1, addLog-2; and what removing one shares with
`reference_impl.flow_removal` (removeJob-2): the keys a job leaves behind, and where it is
looked for."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reference_impl.queue_core import JOB_NOT_EXIST
from reference_impl.store import JsonText
from reference_impl.worker_ops import AddLog, UpdateData, UpdateProgress

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


def scheduler_iteration(model: QueueCore, job_id: str) -> bool:
    """Whether the job is its scheduler's current iteration (removeJob refuses it: -8)."""
    scheduler = model.store.hget(job_id, "rjk")
    if not isinstance(scheduler, str):
        return False
    current = model.store.zscore("repeat", scheduler)
    return current is not None and job_id == f"repeat:{scheduler}:{current}"


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
