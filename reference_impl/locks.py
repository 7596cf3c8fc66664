"""Lock renewal and release: extendLock-2, extendLocks-1, releaseLock-1.

A lock is the string `<id>:lock` holding the worker's token with a PX expiry. Renewal sets it
again with a fresh PX only while the token still holds it, and takes the id out of `stalled`;
a missing lock is never re-created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_impl.worker_ops import ExtendLock, ExtendLocks, ReleaseLock

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore


def _renew(model: QueueCore, job_id: str, token: str, duration: int) -> bool:
    lock = f"{job_id}:lock"
    if model.store.get(lock) != token:
        return False
    model.store.set(lock, token, pttl=duration)
    model.store.srem("stalled", job_id)
    return True


def extend_lock(model: QueueCore, op: ExtendLock) -> int:
    """extendLock-2: 1 when renewed, 0 on another token or no lock."""
    return 1 if _renew(model, op.job_id, op.token, op.duration) else 0


def extend_locks(model: QueueCore, op: ExtendLocks) -> list[str]:
    """extendLocks-1: the ids not renewed, in input order (a missing token never matches)."""
    failed = []
    for index, job_id in enumerate(op.job_ids):
        token = op.tokens[index] if index < len(op.tokens) else None
        if token is None or not _renew(model, job_id, token, op.duration):
            failed.append(job_id)
    return failed


def release_lock(model: QueueCore, op: ReleaseLock) -> int:
    """releaseLock-1: delete the lock when the token holds it; 1 or 0. `stalled` is left."""
    lock = f"{op.job_id}:lock"
    if model.store.get(lock) != op.token:
        return 0
    model.store.delete(lock)
    return 1
