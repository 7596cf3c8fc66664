"""The queue's maintenance calls (`reference_impl.maintenance_ops`) on the model's store, as
the 6.x scripts make them.

drain, clean and obliterate delete jobs through the scripts' `removeJob` with `hard` set
(`remove_hard`): a child leaves its parent's dependencies, and when it was the last pending
one the parent leaves waiting-children and is itself deleted (same queue) or pushed to its
queue's wait (another queue), with no event either way; then the child's deduplication key
(when it still names the child) and its keys go. The caller removes the ids from their state.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from reference_impl import flows, versions
from reference_impl.getters import redis_slice
from reference_impl.job_updates import remove_job_keys, scheduler_iteration
from reference_impl.maintenance_ops import (
    ORPHAN_STATE_KEYS,
    ORPHAN_SUB_KEYS,
    CleanJobsInSet,
    Drain,
    MoveJobsToWait,
    Obliterate,
    RemoveOrphanedJobs,
    ReprocessJob,
    SaveStacktrace,
)
from reference_impl.queue_core import JOB_NOT_EXIST, JOB_NOT_IN_STATE, QueueCore
from reference_impl.store import List, Set, ZSet, hash_text

#: obliterate's codes.
NOT_PAUSED, ACTIVE_JOBS = -1, -2
#: The keys obliterate deletes last, once every job is gone (`delay` is a key no 6.x script
#: writes; it is still deleted).
QUEUE_KEYS = ("events", "delay", "stalled-check", "stalled", "id", "pc", "marker", "meta",
              "metrics:completed", "metrics:completed:data", "metrics:failed",
              "metrics:failed:data")
#: The fields a clean reads a job's age from, by set: the first one the job has.
_AGE_FIELDS = {"delayed": ("processedOn", "timestamp"), "prioritized": ("timestamp",)}
_LIST_AGE_FIELDS = ("finishedOn", "processedOn", "timestamp")


def _members(model: QueueCore, key: str) -> list[str]:
    value = model.store.keys.get(key)
    return [member for member, _ in value.ordered()] if isinstance(value, ZSet) else []


def _items(model: QueueCore, key: str) -> list[str]:
    value = model.store.keys.get(key)
    return list(value.items) if isinstance(value, List) else []


def _unlink_hard(model: QueueCore, job_id: str) -> None:
    """removeParentDependencyKey with `hard`, from the job's own parentKey."""
    store = model.store
    parent_key, dedup = store.hget(job_id, "parentKey"), store.hget(job_id, "deid")
    if not (isinstance(parent_key, str) and parent_key and flows.parent_exists(model, parent_key)):
        return
    parent, parent_id = model.locate(parent_key)
    dependencies = f"{parent_id}:dependencies"
    if not parent.store.srem(dependencies, model.job_key(job_id)):
        return
    if parent.store.scard(dependencies) or not parent.store.zrem("waiting-children", parent_id):
        return
    if parent is model:
        # The parent goes too, from its own parent first. The key deleted with it is named
        # by the child's deduplication id, as the script reads it.
        _unlink_hard(model, parent_id)
        remove_job_keys(model, parent_id)
        if isinstance(dedup, str):
            store.delete(f"de:{dedup}")
    else:
        parent.store.rpush("wait", parent_id)
        parent.base_marker(parent.paused_or_maxed())


def remove_hard(model: QueueCore, job_id: str) -> None:
    """removeJob(id, hard, base, remove the deduplication key): see the module doc."""
    store = model.store
    _unlink_hard(model, job_id)
    dedup = store.hget(job_id, "deid")
    if isinstance(dedup, str) and store.get(f"de:{dedup}") == job_id:
        store.delete(f"de:{dedup}")
        store.delete(f"dn:{dedup}")
    remove_job_keys(model, job_id)


def _scheduled(model: QueueCore) -> set[str]:
    """Each job scheduler's current iteration id, `repeat:<id>:<score>`."""
    return {f"repeat:{sid}:{int(score)}" for sid, score in model.store.zrange("repeat")}


def _remove_list_jobs(model: QueueCore, key: str, most: int,
                      spared: Collection[str] = ()) -> int:
    """removeListJobs: the first `most` ids (0: all) but the spared ones deleted, then as many
    ids LTRIMmed off the list's head as were deleted, spared ones or not."""
    jobs = [job for job in redis_slice(_items(model, key), 0, most - 1) if job not in spared]
    for job in jobs:
        remove_hard(model, job)
    model.store.ltrim_left(key, len(jobs))
    return most - len(jobs)


def _remove_zset_jobs(model: QueueCore, key: str, most: int,
                      spared: Collection[str] = ()) -> int:
    """removeZSetJobs: the first `most` members by rank (0: all) but the spared ones."""
    jobs = [job for job in redis_slice(_members(model, key), 0, most - 1) if job not in spared]
    for job in jobs:
        remove_hard(model, job)
    for job in jobs:
        model.store.zrem(key, job)
    return most - len(jobs)


def drain(model: QueueCore, op: Drain) -> None:
    """drain-5 (see `Drain`)."""
    spared = _scheduled(model)
    _remove_list_jobs(model, "wait", 0, spared)
    _remove_list_jobs(model, "paused", 0, spared)
    if op.delayed:
        _remove_zset_jobs(model, "delayed", 0, spared)
    _remove_zset_jobs(model, "prioritized", 0, spared)


def _age(model: QueueCore, job_id: str, fields: Sequence[str]) -> str | None:
    """getTimestamp: the first of `fields` the job has, as text (None: none)."""
    for name in fields:
        value = model.store.hget(job_id, name)
        if value is not None:
            return hash_text(value)
    return None


def _old(age: str | None, timestamp: int) -> bool:
    # The script compares two strings: Lua orders them byte by byte, not as numbers.
    return age is None or age <= str(timestamp)


def _clean_list(model: QueueCore, op: CleanJobsInSet, waiting: bool) -> list[str]:
    """cleanList: the list's last `limit` ids (all for 0), oldest first by position."""
    items = _items(model, op.set)
    jobs = redis_slice(items, -op.limit if op.limit > 0 else 0, -1)
    first = len(items) - len(jobs)
    deleted: list[str] = []
    marked: list[int] = []
    for index, job in enumerate(jobs):
        if op.limit > 0 and len(deleted) >= op.limit:
            break
        if (waiting or not model.store.exists(f"{job}:lock")) and \
                not scheduler_iteration(model, job) and \
                _old(_age(model, job, _LIST_AGE_FIELDS), op.timestamp):
            marked.append(first + index)
            remove_hard(model, job)
            deleted.append(job)
    if marked:
        # LSET each to "" then LREM 0 "": the marked entries go.
        kept = [item for i, item in enumerate(_items(model, op.set)) if i not in marked]
        model.store.delete(op.set)
        for item in kept:
            model.store.rpush(op.set, item)
    return deleted


def _clean_set(model: QueueCore, op: CleanJobsInSet, finished: bool) -> list[str]:
    """cleanSet: a finished set by score up to the timestamp; delayed and prioritized by the
    job's own age, a scheduler's current iteration spared."""
    value = model.store.keys.get(op.set)
    ranked = value.ordered() if isinstance(value, ZSet) else []
    jobs = [job for job, score in ranked if score >= 0 and (not finished or score <= op.timestamp)]
    if op.limit > 0:
        jobs = jobs[:op.limit]
    deleted: list[str] = []
    for job in jobs:
        if op.limit > 0 and len(deleted) >= op.limit:
            break
        if finished:
            old = True
        else:
            old = not scheduler_iteration(model, job) and \
                _old(_age(model, job, _AGE_FIELDS[op.set]), op.timestamp)
        if old:
            remove_hard(model, job)
            deleted.append(job)
    for job in deleted:
        model.store.zrem(op.set, job)
    return deleted


def clean_jobs_in_set(model: QueueCore, op: CleanJobsInSet) -> list[str]:
    """cleanJobsInSet-3 (see `CleanJobsInSet`)."""
    if op.set in ("wait", "paused", "active"):
        deleted = _clean_list(model, op, waiting=op.set != "active")
    else:
        deleted = _clean_set(model, op, finished=op.set not in _AGE_FIELDS)
    model.event("event", "cleaned", "count", str(len(deleted)))
    return deleted


def obliterate(model: QueueCore, op: Obliterate) -> int:
    """obliterate-2 (see `Obliterate`): 0 when everything went, 1 when `count` ran out."""
    store = model.store
    if store.hget("meta", "paused") is None:
        return NOT_PAUSED
    active = redis_slice(_items(model, "active"), 0, op.count - 1)
    if active and not op.force:
        return ACTIVE_JOBS
    for job in active:
        store.delete(f"{job}:lock")
    for job in active:
        remove_hard(model, job)
    store.ltrim_left("active", len(active))
    left = op.count - len(active)
    if left <= 0:
        return 1
    left = _remove_zset_jobs(model, "delayed", left)
    if left <= 0:
        return 1
    schedulers = redis_slice(_members(model, "repeat"), 0, left - 1)
    for scheduler in schedulers:
        store.delete(f"repeat:{scheduler}")
    for scheduler in schedulers:
        store.zrem("repeat", scheduler)
    left -= len(schedulers)
    if left <= 0:
        return 1
    for key, remove in (("completed", _remove_zset_jobs), ("wait", _remove_list_jobs),
                        ("paused", _remove_list_jobs), ("prioritized", _remove_zset_jobs),
                        ("failed", _remove_zset_jobs)):
        left = remove(model, key, left)
        if left <= 0:
            return 1
    for key in QUEUE_KEYS:
        store.delete(key)
    return 0


def _child_back(model: QueueCore, job_id: str, state: str) -> None:
    """moveChildBackToParentDependencies: a retried child pending again in its parent (which
    stays where it is)."""
    parent_key = model.store.hget(job_id, "parentKey")
    if not (isinstance(parent_key, str) and parent_key and flows.parent_exists(model, parent_key)):
        return
    parent, parent_id = model.locate(parent_key)
    store, me = parent.store, model.job_key(job_id)
    if state == "failed":
        back = store.zrem(f"{parent_id}:unsuccessful", me)
        if not back and store.hget(f"{parent_id}:failed", me) is not None:
            store.hdel(f"{parent_id}:failed", me)
            back = True
    else:
        back = store.hget(f"{parent_id}:processed", me) is not None
        store.hdel(f"{parent_id}:processed", me)
    if back:
        store.sadd(f"{parent_id}:dependencies", me)


#: The field a finished job's result is kept in, by state.
_RESULT_FIELD = {"failed": "failedReason", "completed": "returnvalue"}


def move_jobs_to_wait(model: QueueCore, op: MoveJobsToWait) -> int:
    """moveJobsToWait-8 (see `MoveJobsToWait`): 1 when `count` jobs moved (there may be
    more), else 0."""
    store = model.store
    paused_or_maxed = model.paused_or_maxed()
    value = store.keys.get(op.state)
    ranked = value.ordered() if isinstance(value, ZSet) else []
    jobs = [job for job, score in ranked
            if score >= 0 and (op.timestamp is None or score <= op.timestamp)][:op.count]
    if jobs:
        field = _RESULT_FIELD.get(op.state)
        if field is not None:
            for job in jobs:
                for name in ("finishedOn", "processedOn", field):
                    store.hdel(job, name)
                if model.since(versions.RETRY_RESTORES_DEPENDENCY):
                    _child_back(model, job, op.state)
        model.max_events()
        for job in jobs:
            model.event("event", "waiting", "jobId", job, "prev", op.state)
        for job in jobs:
            store.zrem(op.state, job)
        for job in jobs:
            store.lpush("wait", job)
        model.base_marker(paused_or_maxed)
    return 1 if op.count - len(jobs) <= 0 else 0


def reprocess_job(model: QueueCore, op: ReprocessJob) -> int:
    """reprocessJob (see `ReprocessJob`)."""
    store = model.store
    if not store.exists(op.job_id):
        return JOB_NOT_EXIST
    if not store.zrem(op.state, op.job_id):
        return JOB_NOT_IN_STATE
    dropped = ["finishedOn", "processedOn", _RESULT_FIELD.get(op.state, "returnvalue")]
    dropped += ["atm"] if op.reset_attempts_made else []
    dropped += ["ats"] if op.reset_attempts_started else []
    for name in dropped:
        store.hdel(op.job_id, name)
    paused_or_maxed = model.paused_or_maxed()
    priority = model.priority_of(op.job_id)
    if priority and model.since(versions.RETRY_RESTORES_DEPENDENCY):
        model.prioritize(op.job_id, priority, paused_or_maxed)
    else:
        (store.rpush if op.lifo else store.lpush)("wait", op.job_id)
        model.base_marker(paused_or_maxed)
    _child_back(model, op.job_id, op.state)
    model.max_events()
    model.event("event", "waiting", "jobId", op.job_id, "prev", op.state)
    return 1


def save_stacktrace(model: QueueCore, op: SaveStacktrace) -> int:
    """saveStacktrace-1."""
    if not model.store.exists(op.job_id):
        return JOB_NOT_EXIST
    model.store.hset(op.job_id, "stacktrace", op.stacktrace)
    model.store.hset(op.job_id, "failedReason", op.failed_reason)
    return 0


def _held(model: QueueCore, job_id: str) -> bool:
    """Whether a state key of the client's list holds the id, by the key's type (the
    `marker` zset's members "0" and "1" count too)."""
    for key in ORPHAN_STATE_KEYS:
        value = model.store.keys.get(key)
        if (isinstance(value, List) and job_id in value.items) or \
                (isinstance(value, ZSet) and job_id in value.scores) or \
                (isinstance(value, Set) and job_id in value.members):
            return True
    return False


def remove_orphaned_jobs(model: QueueCore, op: RemoveOrphanedJobs) -> int:
    """removeOrphanedJobs-1: each candidate no state holds is deleted with its sub-keys, and
    counted whether or not any of them existed."""
    removed = 0
    for job in op.job_ids:
        if not _held(model, job):
            for key in (job, *(f"{job}:{suffix}" for suffix in ORPHAN_SUB_KEYS)):
                model.store.delete(key)
            removed += 1
    return removed
