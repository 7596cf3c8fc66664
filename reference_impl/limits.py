"""Rate limits and deduplication keys: moveJobFromActiveToWait-9, getRateLimitTtl-2,
removeDeduplicationKey-1 (deduplication on add lives with the add in the model).

The limiter is the string `limiter`: a counter the fetch INCRs, with the window as its PX.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reference_impl import scores, versions
from reference_impl.job_updates import remove_job_keys
from reference_impl.queue_core import JOB_NOT_EXIST
from reference_impl.worker_ops import (
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    Pttl,
    RemoveDeduplicationKey,
)

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore



def _pttl_result(pttl: int) -> int | Pttl:
    """A PTTL as a result: positive ones are upper bounds (Redis's clock runs on)."""
    return Pttl(pttl) if pttl > 0 else pttl


def move_job_from_active_to_wait(model: QueueCore, op: MoveJobFromActiveToWait
                                 ) -> int | Pttl:
    """moveJobFromActiveToWait-9: the job back to the front of wait (a prioritized one to the
    front of its tier, without a counter or marker); the limiter's PTTL, or 0. There is no -3:
    a job not in active is left where it is, its lock released all the same."""
    if not model.store.exists(op.job_id):
        return JOB_NOT_EXIST
    lock_error = model.remove_lock(op.job_id, op.token)
    if lock_error:
        return lock_error
    if model.store.lrem("active", 1, op.job_id):
        priority = model.priority_of(op.job_id)
        if priority == 0:
            paused_or_maxed = model.paused_or_maxed()
            model.store.rpush("wait", op.job_id)
            model.base_marker(paused_or_maxed)
        else:
            model.store.zadd("prioritized", priority * scores.TIER, op.job_id)
        model.max_events()
        model.event("event", "waiting", "jobId", op.job_id, "prev", "active")
    pttl = model.store.pttl("limiter")
    return Pttl(pttl) if pttl > 0 else 0


def get_rate_limit_ttl(model: QueueCore, op: GetRateLimitTtl) -> int | Pttl:
    """getRateLimitTtl-2: the window left once the counter reached the max (meta's when the
    caller passes 0); with no max anywhere, the raw PTTL (-1 without expiry, -2 without key)."""
    max_jobs = op.max_jobs
    if max_jobs == 0:
        meta_max = model.store.hget("meta", "max")
        if not isinstance(meta_max, str):
            return _pttl_result(model.store.pttl("limiter"))
        max_jobs = int(meta_max)
    return _pttl_result(model.rate_limit_ttl(max_jobs))


def remove_deduplication_key(model: QueueCore, op: RemoveDeduplicationKey) -> int:
    """removeDeduplicationKey-1: DEL `de:<id>` when it names this job; 1, else 0."""
    key = f"de:{op.deduplication_id}"
    if model.store.get(key) != op.job_id:
        return 0
    model.store.delete(key)
    return 1


def deduplicate(model: QueueCore, options: Mapping[str, Any], job_id: str) -> str | None:
    """The add's deduplication (`opts.de = {id, ttl?, extend?, replace?}`), after the
    duplicate-id check: the owner's id when the add is deduplicated (nothing is stored), or
    None when `job_id` now owns `de:<id>` and the add goes on."""
    dedup_id = str(options["id"])
    key = f"de:{dedup_id}"
    ttl = int(options.get("ttl") or 0)
    expiry = ttl if ttl > 0 else None
    owner = model.store.get(key)
    if owner is None:
        model.store.set(key, job_id, pttl=expiry)
        return None
    if options.get("replace") and model.store.zrem("delayed", owner):
        remove_job_keys(model, owner)
        model.store.delete(f"dn:{dedup_id}")
        keep = model.store.pttl(key) if ttl > 0 and not options.get("extend") else expiry
        model.store.set(key, job_id, pttl=keep if keep is not None and keep > 0 else None)
        model.max_events()
        model.event("event", "removed", "jobId", owner, "prev", "delayed")
        model.event("event", "deduplicated", "jobId", job_id, "deduplicationId", dedup_id,
                    "deduplicatedJobId", owner)
        return None
    if (model.since(versions.STALE_DEDUP_KEY) and model.store.pttl(key) == -1
            and not model.store.exists(owner)):
        # A stale key: its job is gone and nothing would ever expire it.
        model.store.delete(f"dn:{dedup_id}")
        model.store.set(key, job_id, pttl=expiry)
        return None
    if options.get("replace"):
        return owner  # an owner that is not delayed stays; no event on this path
    if options.get("extend") and expiry is not None:
        model.store.set(key, owner, pttl=expiry)
    model.max_events()
    model.event("event", "deduplicated", "jobId", owner, "deduplicationId", dedup_id,
                "deduplicatedJobId", job_id)
    return owner
