"""Job schedulers (6.x): addJobScheduler-11, updateJobScheduler-12, removeJobScheduler-3 and
getJobScheduler-1, on the model's keys (`reference_impl.scheduler_ops` has the ops and their
normalized results).

An upsert replaces the scheduler's hash (keeping its iteration count and, unless the call
gives one, its offset) and its current iteration, when that iteration is still delayed,
prioritized or waiting: the replacement keeps the old fire time when the interval did not
change. Iteration ids are `repeat:<scheduler id>:<fire time>`, so two clients that compute
different fire times write two different jobs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from reference_impl.job_updates import remove_job_keys
from reference_impl.ops import Add
from reference_impl.queue_core import lua_int_text
from reference_impl.scheduler_ops import (
    AddJobScheduler,
    GetJobScheduler,
    RemoveJobScheduler,
    UpdateJobScheduler,
)
from reference_impl.store import JsonText, hash_text

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore


#: The add path a scheduler's iteration takes (`QueueModel.add_iteration`, which lives with
#: the adds in `reference_impl.model`, a module that imports this one): store and enqueue the
#: job of an `Add`, given its id and the id counter's new value.
Enqueue = Callable[[Add, str, int], None]


#: addJobScheduler's codes: a pattern's iteration id is taken by another job; every slot an
#: `every` scheduler walked forward to was taken.
SCHEDULER_JOB_ID_COLLISION = -10
SCHEDULER_JOB_SLOTS_BUSY = -11
#: How many slots past a taken one an `every` upsert tries before -11.
MAX_SLOT_SCANS = 32


def every_next_millis(prev: int | None, every: int, now: int, offset: int | None,
                      start_date: int | None) -> tuple[int, int]:
    """The next fire time of an `every` scheduler, and its offset within the interval
    (getJobSchedulerEveryNextMillis).

    The first iteration (`prev` None) fires at the start date when one is given (or now, if
    that is past), else at the next slot `k * every + offset` after now when an offset is
    given, else now. A later one fires `every` after the previous, unless that is already past:
    then at the slot of now plus the offset, or the one after when that too is not ahead. An
    offset of 0 or none is then taken from where the fire time falls in its interval.
    """
    if prev is None:
        if start_date is not None:
            fire = max(start_date, now)
        elif offset:
            fire = now // every * every + offset
            if fire <= now:
                fire += every
        else:
            fire = now
    else:
        fire = prev + every
        if fire < now:
            aligned = now // every * every + (offset or 0)
            fire = aligned + every if aligned <= now else aligned
    if not offset:
        offset = fire - fire // every * every
    return fire, offset


def add_job_scheduler(model: QueueCore, op: AddJobScheduler, enqueue: Enqueue
                      ) -> dict[str, Any] | int:
    """addJobScheduler-11: store the scheduler and add its iteration (see the module)."""
    store = model.store
    key = f"repeat:{op.scheduler_id}"
    model.max_events()
    prev = _number(store.zscore("repeat", op.scheduler_id))
    repeat = op.job_opts.get("repeat") or {}
    offset = op.offset if op.offset is not None else int(repeat.get("offset") or 0)
    fire = op.next_millis
    new_offset = offset
    every_changed = False
    if op.every:
        millis = prev
        if prev is not None and _number(store.hget(key, "every")) != op.every:
            millis, every_changed = None, True
        fire, new_offset = every_next_millis(millis, op.every, op.now, offset, op.start_date)
    if fire is None:
        raise ValueError("a pattern scheduler needs the client's next_millis")
    removed = prev is not None and store.exists(f"{key}:{lua_int_text(prev)}") \
        and _remove_iteration(model, f"repeat:{op.scheduler_id}:{lua_int_text(prev)}")
    stored_offset = op.offset
    if removed:
        if op.every and not every_changed and prev is not None:
            fire = prev
    else:
        stored_offset = new_offset
    job_id = f"repeat:{op.scheduler_id}:{lua_int_text(fire)}"
    collision = False
    if store.exists(job_id):
        if not op.every:
            collision = True
        else:
            for _ in range(MAX_SLOT_SCANS):
                fire += op.every
                job_id = f"repeat:{op.scheduler_id}:{lua_int_text(fire)}"
                if not store.exists(job_id):
                    break
            else:
                return SCHEDULER_JOB_SLOTS_BUSY
    if collision and not removed:
        return SCHEDULER_JOB_ID_COLLISION
    delay = max(0, fire - op.now)
    _store_scheduler(model, op, fire, stored_offset)
    counter = store.incr("id")
    _add_iteration(model, enqueue, job_id, op.name, json.dumps(op.data), op.job_opts, op.now,
                   op.scheduler_id, delay, counter)
    return {"job": job_id, "delay": delay}


def update_job_scheduler(model: QueueCore, op: UpdateJobScheduler, enqueue: Enqueue
                         ) -> str | None:
    """updateJobScheduler-12: the next iteration, when `producer_id` is the current one."""
    store = model.store
    prev = _number(store.zscore("repeat", op.scheduler_id))
    if prev is None:
        return None
    key = f"repeat:{op.scheduler_id}"
    repeat = op.job_opts.get("repeat") or {}
    every = _number(store.hget(key, "every"))
    if every is None and repeat.get("every"):
        every = int(repeat["every"])
    fire = op.next_millis
    job_opts = dict(op.job_opts)
    if every:
        stored = store.hget(key, "offset")
        offset = _number(stored) if stored is not None else int(repeat.get("offset") or 0)
        fire, _ = every_next_millis(prev, every, op.now, offset,
                                    _number(store.hget(key, "startDate")))
    job_id = f"repeat:{op.scheduler_id}:{lua_int_text(fire)}"
    if op.producer_id != f"repeat:{op.scheduler_id}:{lua_int_text(prev)}":
        return None
    model.max_events()
    if store.exists(job_id):
        model.event("event", "duplicated", "jobId", job_id)
        return None
    store.zadd("repeat", fire, op.scheduler_id)
    store.hincrby(key, "ic", 1)
    counter = store.incr("id")
    data = store.hget(key, "data")
    name = store.hget(key, "name")
    _add_iteration(model, enqueue, job_id, str(name), str(data) if data is not None else "{}",
                   job_opts, op.now, op.scheduler_id, max(0, fire - op.now), counter)
    return job_id


def remove_job_scheduler(model: QueueCore, op: RemoveJobScheduler) -> int:
    """removeJobScheduler-3: 0 when the scheduler existed, else 1. Its current iteration goes
    too when it is still delayed (with a `removed` event); one already waiting stays."""
    store = model.store
    remove_delayed_iteration(model, f"repeat:{op.scheduler_id}:", op.scheduler_id)
    if store.zrem("repeat", op.scheduler_id):
        store.delete(f"repeat:{op.scheduler_id}")
        return 0
    return 1


def remove_delayed_iteration(model: QueueCore, prefix: str, member: str,
                             hash_only: bool = False) -> None:
    """A job scheduler's or repeatable job's current iteration, `<prefix><score of member in
    repeat>`, while it is still delayed: out of delayed with its keys (only its hash when
    `hash_only`: removeRepeatable before 5.10.0), and a `removed` event. One that already
    waits or runs stays (the includes' removeDelayedIteration)."""
    score = model.store.zscore("repeat", member)
    if score is None:
        return
    job_id = prefix + lua_int_text(int(score))
    if model.store.zrem("delayed", job_id):
        if hash_only:
            model.store.delete(job_id)
        else:
            remove_job_keys(model, job_id)
        model.event("event", "removed", "jobId", job_id, "prev", "delayed")


def get_job_scheduler(model: QueueCore, op: GetJobScheduler) -> dict[str, Any] | None:
    """getJobScheduler-1: the scheduler's hash and next fire time, or None."""
    millis = model.store.zscore("repeat", op.scheduler_id)
    if millis is None:
        return None
    fields = model.store.hgetall(f"repeat:{op.scheduler_id}")
    return {"fields": {name: hash_text(value) for name, value in fields.items()},
            "next": int(millis)}


def _remove_iteration(model: QueueCore, job_id: str) -> bool:
    """addJobScheduler's removeJobFromScheduler: the iteration leaves delayed, prioritized or
    the wait list, with its keys (no event). While the queue is paused the script looks in the
    legacy `paused` list, which 6.x never fills, so a waiting iteration stays."""
    store = model.store
    for state in ("delayed", "prioritized"):
        if store.zscore(state, job_id) is not None:
            remove_unparented_job(model, job_id)
            store.zrem(state, job_id)
            return True
    target = "paused" if model.store.hget("meta", "paused") is not None else "wait"
    if store.lrem(target, 1, job_id):
        remove_unparented_job(model, job_id)
        return True
    return False


def remove_unparented_job(model: QueueCore, job_id: str) -> None:
    """The removeJob include for a job without parent or children (a scheduler's or a
    repeatable job's iteration): its deduplication key and pending next job when it still owns
    the key, then its keys."""
    dedup = model.store.hget(job_id, "deid")
    if isinstance(dedup, str) and model.store.get(f"de:{dedup}") == job_id:
        model.store.delete(f"de:{dedup}")
        model.store.delete(f"dn:{dedup}")
    remove_job_keys(model, job_id)


def _store_scheduler(model: QueueCore, op: AddJobScheduler, fire: int,
                     offset: int | None) -> None:
    """storeJobScheduler: the `repeat` score, and the hash written afresh (its `ic` and, when
    the call has no offset, its offset kept)."""
    store = model.store
    key = f"repeat:{op.scheduler_id}"
    store.zadd("repeat", fire, op.scheduler_id)
    fields: dict[str, str | JsonText] = {"name": op.name}
    for name, value in (("tz", op.tz), ("limit", op.limit), ("pattern", op.pattern),
                        ("startDate", op.start_date), ("endDate", op.end_date),
                        ("every", op.every)):
        # Lua's truth: 0 is stored, only a missing option is not.
        if value is not None:
            fields[name] = lua_int_text(value) if isinstance(value, int) else value
    kept_offset = store.hget(key, "offset")
    if offset is not None:
        fields["offset"] = lua_int_text(offset)
    elif kept_offset is not None:
        fields["offset"] = lua_int_text(int(str(kept_offset)))
    if op.template_opts:
        fields["opts"] = JsonText(dict(op.template_opts), exact=False)
    data = json.dumps(op.data)
    if data != "{}":
        fields["data"] = JsonText(op.data)
    count = store.hget(key, "ic")
    fields["ic"] = str(count) if count is not None else "1"
    store.delete(key)
    for name, text in fields.items():
        store.hset(key, name, text)


def _add_iteration(model: QueueCore, enqueue: Enqueue, job_id: str, name: str, data: str,
                   job_opts: Mapping[str, Any], now: int, scheduler_id: str, delay: int,
                   counter: int) -> None:
    """addJobFromScheduler: the iteration stored (with `rjk`) and enqueued as an add with its
    delay and id would be."""
    opts = {**job_opts, "delay": delay, "jobId": job_id}
    add = Add(name=name, timestamp=now, data=json.loads(data), opts=opts, job_id=job_id)
    enqueue(add, job_id, counter)
    model.store.hset(job_id, "rjk", scheduler_id)


def _number(raw: object) -> int | None:
    """Lua's tonumber of a hash value or a score, for the integral values schedulers store."""
    if raw is None:
        return None
    try:
        return int(str(raw))
    except ValueError:
        return None
