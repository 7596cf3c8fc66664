"""Getting a job going again: retryJob-11, the client's backoff for the moveToDelayed path, and
the stall check moveStalledJobsToWait-9 (RESEARCH-WORKER.md §2, §4)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from reference_impl.ops import Result
from reference_impl.queue_core import JOB_NOT_EXIST, JOB_NOT_IN_STATE, LEGACY_MARKER, QueueCore
from reference_impl.worker_ops import MoveStalledJobsToWait, RetryJob

#: The `defa` text the stall check leaves for the next fetch to fail the job with.
STALLED_TOO_OFTEN = "job stalled more than allowable limit"


def _js_round(value: float) -> int:
    """JavaScript's Math.round: halves go up (toward +infinity), unlike Python's round."""
    return math.floor(value + 0.5)


def backoff_delay(backoff: int | float | Mapping[str, Any], attempt: int) -> int:
    """The delay the client computes for a retry (`Backoffs.calculate`), without Node's jitter.

    `backoff` is the job's `opts.backoff`: a number `n` means `{type: "fixed", delay: n}`.
    `attempt` is the attempt that just failed, `atm + 1`. Fixed gives `delay`; exponential
    gives `round(2^(attempt-1) * delay)`. A result of 0 makes the client call retryJob, a
    positive one moveToDelayed with it.
    """
    spec: Mapping[str, Any] = (
        {"type": "fixed", "delay": backoff} if isinstance(backoff, int | float) else backoff)
    delay = spec.get("delay") or 0
    kind = spec.get("type")
    if kind == "fixed":
        return _js_round(delay)
    if kind == "exponential":
        return _js_round(2 ** (attempt - 1) * delay)
    raise ValueError(f"backoff type {kind!r} is a custom strategy, not part of the protocol")


def retry_job(model: QueueCore, op: RetryJob) -> Result:
    """retryJob-11: sweep the due delayed jobs, release the lock, and put the job back in wait
    (LPUSH, or RPUSH with lifo) or prioritized with a fresh counter; count the attempt."""
    store = model.store
    # Computed while the job still counts as active: it governs the sweep's marker only.
    model.promote_due(op.now, model.paused_or_maxed())
    if not store.exists(op.job_id):
        return JOB_NOT_EXIST
    lock_error = model.remove_lock(op.job_id, op.token)
    if lock_error:
        return lock_error
    if op.fields:
        model.update_fields(op.job_id, op.fields)
    if not store.lrem_last("active", op.job_id):
        return JOB_NOT_IN_STATE
    paused_or_maxed = model.paused_or_maxed()
    priority = model.priority_of(op.job_id)
    if priority == 0:
        if op.lifo:
            store.rpush("wait", op.job_id)
        else:
            store.lpush("wait", op.job_id)
        model.base_marker(paused_or_maxed)
    else:
        model.prioritize(op.job_id, priority, paused_or_maxed)
    store.hincrby(op.job_id, "atm", 1)
    model.max_events()
    model.event("event", "waiting", "jobId", op.job_id, "prev", "active")
    return 0


def _live_scheduler_job(model: QueueCore, job_id: str) -> bool:
    """Whether the job belongs to a job scheduler that still exists (its `repeat:<rjk>` hash, or
    the legacy repeatable entry in the `repeat` zset)."""
    scheduler = model.store.hget(job_id, "rjk")
    if not isinstance(scheduler, str):
        return False
    return (model.store.exists(f"repeat:{scheduler}")
            or model.store.zscore("repeat", scheduler) is not None)


def _recover(model: QueueCore, job_id: str, max_stalled_count: int) -> bool:
    """One suspect of the stall check: back to the front of wait if it is lockless and still
    active. True when it was recovered."""
    store = model.store
    if store.exists(f"{job_id}:lock"):
        return False
    if not store.lrem("active", 1, job_id):
        return False
    stalls = store.hincrby(job_id, "stc", 1)
    if stalls > max_stalled_count and not _live_scheduler_job(model, job_id):
        store.hset(job_id, "defa", STALLED_TOO_OFTEN)
    # Evaluated per job, after its LREM: each recovery frees a concurrency slot.
    paused_or_maxed = model.paused_or_maxed()
    store.rpush("wait", job_id)
    model.base_marker(paused_or_maxed)
    model.event("event", "waiting", "jobId", job_id, "prev", "active")
    model.event("event", "stalled", "jobId", job_id)
    return True


def move_stalled_jobs_to_wait(model: QueueCore, op: MoveStalledJobsToWait) -> Result:
    """moveStalledJobsToWait-9: at most once per stalledInterval, move every suspect from the
    last pass that is still active and lockless back to wait, then make every active job a
    suspect for the next pass. Returns the ids moved."""
    store = model.store
    if store.exists("stalled-check"):
        return []
    store.set("stalled-check", str(op.now), pttl=op.stalled_interval)
    # XTRIM MAXLEN ~ (whole stream nodes): below the model's events bound it removes nothing.
    model.max_events()
    suspects = store.smembers("stalled")
    store.delete("stalled")
    moved = []
    for job_id in suspects:
        if job_id.startswith(LEGACY_MARKER):
            store.lrem("active", 1, job_id)
        elif _recover(model, job_id, op.max_stalled_count):
            moved.append(job_id)
    for job_id in store.lrange("active"):
        store.sadd("stalled", job_id)
    return moved
