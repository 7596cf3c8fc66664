"""Removing jobs of a flow: removeJob-2 (a child, a parent with or without its children) and
removeUnprocessedChildren-2.

Both go through one recursive removal (BullMQ's removeJobWithChildren): a job first leaves its
parent's dependencies (the last one releasing a parent that waits for children to the head of
wait), then, when children go too, its processed, failed (`:failed` and `:unsuccessful`) and
pending children, then its own state, its deduplication key and its keys, with `removed`.
Several children pending at once are removed in SMEMBERS order, which Redis does not fix: the
model raises NotImplementedError for that (`Store.smembers`), and no vector depends on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reference_impl import flows
from reference_impl.job_updates import (
    JOB_BELONGS_TO_SCHEDULER,
    LIST_STATES,
    ZSET_STATES,
    remove_job_keys,
    scheduler_iteration,
)
from reference_impl.worker_ops import RemoveJob, RemoveUnprocessedChildren

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore


@dataclass(frozen=True)
class _Options:
    """removeJobWithChildren's options."""

    children: bool
    ignore_processed: bool
    ignore_locked: bool


def remove_job(model: QueueCore, op: RemoveJob) -> int:
    """removeJob-2: -8 for a scheduler's current iteration; 0 while the job, or with
    `remove_children` any pending descendant, holds a lock; else 1 (a missing job too)."""
    if scheduler_iteration(model, op.job_id):
        return JOB_BELONGS_TO_SCHEDULER
    children = op.remove_children is not False
    if _locked(model, op.job_id, children):
        return 0
    _remove(model, op.job_id, None, _Options(children, False, False))
    return 1


def remove_unprocessed_children(model: QueueCore, op: RemoveUnprocessedChildren) -> None:
    """removeUnprocessedChildren-2: the job's pending children go, with theirs; a locked
    child or one that failed stays. The script answers nothing."""
    _remove_children(model, op.job_id, _Options(True, True, True))


def _locked(model: QueueCore, job_id: str, children: bool) -> bool:
    if model.store.exists(f"{job_id}:lock"):
        return True
    if not children:
        return False
    return any(_locked(*model.locate(key), children)
               for key in model.store.smembers(f"{job_id}:dependencies"))


def _remove(model: QueueCore, job_id: str, parent_key: str | None, opts: _Options) -> None:
    store = model.store
    if opts.ignore_locked and store.exists(f"{job_id}:lock"):
        return
    if opts.ignore_processed and store.zscore("failed", job_id) is not None:
        return
    if parent_key is not None:
        flows.unlink_removed_child(model, job_id, parent_key)
    else:
        own = store.hget(job_id, "parentKey")
        if isinstance(own, str) and own and flows.parent_exists(model, own):
            flows.unlink_removed_child(model, job_id, own)
    if opts.children:
        _remove_children(model, job_id, opts)
    state = _leave_state(model, job_id)
    dedup = store.hget(job_id, "deid")
    if isinstance(dedup, str) and store.get(f"de:{dedup}") == job_id:
        store.delete(f"de:{dedup}")
        store.delete(f"dn:{dedup}")
    if remove_job_keys(model, job_id):
        model.max_events()
        model.event("event", "removed", "jobId", job_id, "prev", state)


def _remove_children(model: QueueCore, job_id: str, opts: _Options) -> None:
    """removeJobChildren: unless processed ones are spared, the children in `:processed`,
    `:failed` and `:unsuccessful`, then the pending ones."""
    store = model.store
    keys: list[str] = []
    if not opts.ignore_processed:
        keys += list(store.hgetall(f"{job_id}:processed"))
        keys += list(store.hgetall(f"{job_id}:failed"))
        keys += [member for member, _ in store.zrange(f"{job_id}:unsuccessful")]
    # A child may live in another queue: it is removed there.
    for key in keys:
        _remove(*model.locate(key), model.job_key(job_id), opts)
    for key in store.smembers(f"{job_id}:dependencies"):
        _remove(*model.locate(key), model.job_key(job_id), opts)


def _leave_state(model: QueueCore, job_id: str) -> str:
    """removeJobFromAnyState: the first set or list holding the job, in BullMQ's order."""
    for name in ZSET_STATES:
        if model.store.zrem(name, job_id):
            return name
    for name in LIST_STATES:
        if model.store.lrem(name, 1, job_id):
            return name
    return "unknown"
