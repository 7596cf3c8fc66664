"""moveToFinished-14: completing and failing a job, retention, metrics, fetch-next.

The script checks the job (-1), its children (-4, -9, completed only), the lock (-2, -6),
writes the client's fields, takes the job out of `active` (-3), and only then writes anything
else: the events cap, the dedup release, `atm`, the finished set (or the job's deletion), the
trims, the events, the metrics and the fetch of the next job. Nothing rolls back, so an early
return keeps what was written before it.

A child's end acts on its parent (`reference_impl.flows`): completed, through `parentKey`;
failed, through the stored parent record; a trimmed child is unlinked like a removed one. Out
of scope (the model raises NotImplementedError): the keepLastIfActive requeue (`dn:<deid>`).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from reference_impl import flows
from reference_impl.job_updates import remove_job_keys
from reference_impl.ops import Result
from reference_impl.queue_core import (
    FETCH_LOCK_DURATION,
    JOB_HAS_FAILED_CHILDREN,
    JOB_NOT_EXIST,
    JOB_NOT_IN_STATE,
    JOB_PENDING_CHILDREN,
)
from reference_impl.store import Score
from reference_impl.worker_ops import MoveToFinished

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore

#: keepJobs.limit when the client sends none: most jobs one age trim removes.
DEFAULT_AGE_LIMIT = 1000
#: Metrics granularity: one data point per minute.
METRICS_INTERVAL = 60000


def move_to_finished(model: QueueCore, op: MoveToFinished) -> Result:
    """moveToFinished-14: move an active job to `completed` or `failed` at `op.now`.

    Returns the script's integer code, or the normalized `{job, ttl, next}` when fetch-next
    answered with an array (a job, a rate limit, a paused or maxed queue, or the next delayed
    fire time).
    """
    if op.keep_jobs is None:
        raise ValueError("moveToFinished needs keepJobs (the script indexes it: a Lua error)")
    store = model.store
    job_id = op.job_id
    if not store.exists(job_id):
        return JOB_NOT_EXIST
    if op.target == "completed":
        if store.scard(f"{job_id}:dependencies") != 0:
            return JOB_PENDING_CHILDREN
        if store.zcard(f"{job_id}:unsuccessful") != 0:
            return JOB_HAS_FAILED_CHILDREN
    lock_error = model.remove_lock(job_id, op.token)
    if lock_error:
        return lock_error
    if op.fields:
        model.update_fields(job_id, op.fields)
    # read before the LREM, as the script's HMGET is
    dedup_id = store.hget(job_id, "deid")
    parent_key = store.hget(job_id, "parentKey")
    record = flows.stored_record(model, job_id)
    if not store.lrem_last("active", job_id):
        return JOB_NOT_IN_STATE
    model.max_events()
    if isinstance(dedup_id, str):
        _release_dedup(model, dedup_id, job_id)
    if op.target == "completed" and isinstance(parent_key, str):
        flows.child_completed(model, parent_key, job_id, op.value, op.now)
    elif op.target == "completed" and record is not None:
        raise NotImplementedError("a parent record without parentKey is not modelled")
    elif record is not None:
        flows.child_failed(model, record, job_id, op.value, op.now)
    attempts_made = store.hincrby(job_id, "atm", 1)
    value_field = "returnvalue" if op.target == "completed" else "failedReason"
    _retain(model, op, value_field)
    model.event("event", op.target, "jobId", job_id, value_field, op.value, "prev", "active")
    if op.target == "failed" and op.attempts is None:
        # the script fails comparing atm with nil, after the finished writes and the event
        raise ValueError("moveToFinished(failed) needs attempts (a Lua error in BullMQ)")
    if op.target == "failed" and op.attempts is not None and attempts_made >= op.attempts:
        model.event("event", "retries-exhausted", "jobId", job_id,
                    "attemptsMade", str(attempts_made))
    if op.max_metrics_size is not None:
        collect_metrics(model, op.target, op.max_metrics_size, op.now)
    if op.fetch_next:
        got = _fetch_next(model, op)
        if got is not None:
            return got
    if (store.llen("wait") == 0 and store.llen("active") == 0
            and store.zcard("prioritized") == 0):
        model.event("event", "drained")
    return 0


def _release_dedup(model: QueueCore, dedup_id: str, job_id: str) -> None:
    """`de:<deid>` goes only when it has no expiry and still names this job (a key whose TTL
    runs is left to expire). The `PTTL == 0` branch cannot be seeded and is not modelled."""
    key = f"de:{dedup_id}"
    if model.store.pttl(key) == -1 and model.store.get(key) == job_id:
        model.store.delete(key)
    if model.store.exists(f"dn:{dedup_id}"):
        raise NotImplementedError("the keepLastIfActive requeue (dn:<deid>) is not modelled")


def _retain(model: QueueCore, op: MoveToFinished, value_field: str) -> None:
    """Step 7: into the finished set with the value and finishedOn, then the age and count
    trims; or, for count 0, the job's keys deleted at once."""
    keep: Mapping[str, Any] = op.keep_jobs or {}
    count = keep.get("count")
    store = model.store
    if count == 0:
        parent_key = store.hget(op.job_id, "parentKey")
        remove_job_keys(model, op.job_id)
        if isinstance(parent_key, str):
            flows.unlink_removed_child(model, op.job_id, parent_key)
        return
    target = op.target
    store.zadd(target, op.now, op.job_id)
    store.hset(op.job_id, value_field, op.value)
    store.hset(op.job_id, "finishedOn", str(op.now))
    if target == "failed":
        store.hdel(op.job_id, "defa")
    age = keep.get("age")
    if age is not None:
        trim_by_age(model, target, age_cutoff(op.now, age),
                    int(keep.get("limit", DEFAULT_AGE_LIMIT)))
    if count is not None and count > 0:
        trim_by_count(model, target, int(count))


def age_cutoff(now: int, age: int | float) -> int | Fraction:
    """`now - age * 1000` as the script computes it, in Lua doubles; exact as a score bound."""
    if isinstance(age, int):
        return now - age * 1000
    cutoff = Fraction(float(now) - float(age) * 1000)
    return cutoff.numerator if cutoff.denominator == 1 else cutoff


def _remove_trimmed(model: QueueCore, job_id: str) -> None:
    """removeJob (soft): a trimmed child still pending for an existing parent is unlinked
    first (a failed one without a policy), then its keys go."""
    parent_key = model.store.hget(job_id, "parentKey")
    if isinstance(parent_key, str) and parent_key and flows.parent_exists(model, parent_key):
        flows.unlink_removed_child(model, job_id, parent_key)
    remove_job_keys(model, job_id)


def trim_by_age(model: QueueCore, target: str, cutoff: Score, limit: int) -> None:
    """Remove finished jobs scored `<= cutoff`, newest first, at most `limit` of them (the
    ZREVRANGEBYSCORE cutoff -inf LIMIT 0 limit of the script); their keys go too."""
    expired = [member for member, score in reversed(model.store.zrange(target))
               if score <= cutoff]
    if limit >= 0:
        expired = expired[:limit]
    for job_id in expired:
        _remove_trimmed(model, job_id)
    # the script's ZREMRANGEBYSCORE when fewer than limit were found removes the same members
    for job_id in expired:
        model.store.zrem(target, job_id)


def trim_by_count(model: QueueCore, target: str, count: int) -> None:
    """Keep the `count` highest-ranked members (ZRANGE order: score, then member bytes)."""
    ranked = model.store.zrange(target)
    doomed = [member for member, _ in ranked[:max(len(ranked) - count, 0)]]
    for job_id in reversed(doomed):
        _remove_trimmed(model, job_id)
    for job_id in doomed:
        model.store.zrem(target, job_id)


def collect_metrics(model: QueueCore, target: str, max_points: int, now: int) -> None:
    """The per-minute metrics of `target`: `count` always goes up; a minute boundary since
    `prevTS` pushes the delta of the minutes before (and a zero per further minute)."""
    store = model.store
    key = f"metrics:{target}"
    before = store.hincrby(key, "count", 1) - 1
    prev_ts = store.hget(key, "prevTS")
    if not isinstance(prev_ts, str):
        store.hset(key, "prevTS", str(now))
        store.hset(key, "prevCount", "0")
        return
    minutes = min(now // METRICS_INTERVAL - int(prev_ts) // METRICS_INTERVAL, max_points)
    if minutes <= 0:
        return
    prev_count = store.hget(key, "prevCount")
    delta = before - int(prev_count if isinstance(prev_count, str) else 0)
    data = f"{key}:data"
    store.lpush(data, str(delta))
    for _ in range(minutes - 1):
        store.lpush(data, "0")
    store.ltrim(data, 0, max_points - 1)
    store.hset(key, "prevCount", str(before))
    store.hset(key, "prevTS", str(now))


def _fetch_next(model: QueueCore, op: MoveToFinished) -> Result | None:
    """The fetch-next: its array as `{job, ttl, next}`, or None where the script's fetch
    returned nothing (nothing ready and delayed empty), which goes on to the drained check."""
    paused_or_maxed = model.paused_or_maxed()
    lock_duration = op.lock_duration if op.lock_duration is not None else FETCH_LOCK_DURATION
    got = model.take_next(op.now, op.token, lock_duration, op.limiter)
    nothing = got["job"] is None and got["ttl"] == 0 and got["next"] == 0
    if nothing and not paused_or_maxed:
        return None
    return got
