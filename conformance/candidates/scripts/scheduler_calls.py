"""The job scheduler ops' script calls for `scripts:DIR`: KEYS layouts and ARGV as npm bullmq
6.7.0's client sends them (`Queue.upsertJobScheduler`, the worker's next iteration,
`removeJobScheduler`, `getJobScheduler`), and their replies as the ops' results
(`reference_impl.scheduler_ops`).

A layout suffix `{job}` is filled per call: updateJobScheduler's producer job key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.candidates.scripts.call import hash_fields
from conformance.candidates.scripts.worker_calls import Caller, pack
from reference_impl.job_updates import client_json
from reference_impl.ops import Result
from reference_impl.scheduler_ops import (
    AddJobScheduler,
    GetJobScheduler,
    RemoveJobScheduler,
    UpdateJobScheduler,
)

#: KEYS of each scheduler script, by name (the file is `<name>-<len(keys)>.lua`).
SCHEDULER_KEYS: dict[str, tuple[str, ...]] = {
    "addJobScheduler": ("repeat", "delayed", "wait", "paused", "meta", "prioritized", "marker",
                        "id", "events", "pc", "active"),
    "updateJobScheduler": ("repeat", "delayed", "wait", "paused", "meta", "prioritized",
                           "marker", "id", "events", "pc", "{job}", "active"),
    "removeJobScheduler": ("repeat", "delayed", "events"),
    "getJobScheduler": ("repeat",),
}


def scheduler_opts(op: AddJobScheduler) -> dict[str, Any]:
    """The scheduler options map the client packs (the options it was given, no others)."""
    opts: dict[str, Any] = {"name": op.name}
    for name, value in (("startDate", op.start_date), ("endDate", op.end_date), ("tz", op.tz),
                        ("pattern", op.pattern), ("every", op.every), ("limit", op.limit),
                        ("offset", op.offset)):
        if value is not None:
            opts[name] = value
    return opts


def _add(call: Caller, base: str, op: AddJobScheduler) -> Any:
    args = ["" if op.next_millis is None else op.next_millis, pack(scheduler_opts(op)),
            op.scheduler_id, client_json(op.data), pack(dict(op.template_opts)),
            pack(dict(op.job_opts)), op.now, base, ""]
    return call("addJobScheduler", args, {})


def _update(call: Caller, base: str, op: UpdateJobScheduler) -> Any:
    args = [op.next_millis, op.scheduler_id, "{}", pack(dict(op.job_opts)), op.now, base,
            op.producer_id]
    return call("updateJobScheduler", args, {"job": op.producer_id})


def _remove(call: Caller, base: str, op: RemoveJobScheduler) -> Any:
    return call("removeJobScheduler", [op.scheduler_id, base], {})


def _get(call: Caller, base: str, op: GetJobScheduler) -> Any:
    return call("getJobScheduler", [op.scheduler_id], {})


CALLS: dict[type, Callable[[Caller, str, Any], Any]] = {
    AddJobScheduler: _add,
    UpdateJobScheduler: _update,
    RemoveJobScheduler: _remove,
    GetJobScheduler: _get,
}


def normalized(op: Any, reply: Any) -> Result:
    """A scheduler script's decoded reply as the op's result: addJobScheduler's `[id, delay]`
    as `{job, delay}`, getJobScheduler's `[HGETALL, score]` as `{fields, next}` and its empty
    array as None; anything else (a negative code, an id, nil) as it came."""
    if isinstance(op, AddJobScheduler) and isinstance(reply, list) and len(reply) == 2:
        try:
            return {"job": str(reply[0]), "delay": int(reply[1])}
        except (TypeError, ValueError):
            pass  # not an id and a delay: shown as it came
    if isinstance(op, GetJobScheduler) and isinstance(reply, list):
        if not reply:
            return None
        if len(reply) == 2 and isinstance(reply[0], list):
            flat = [str(item) for item in reply[0]]
            try:
                return {"fields": hash_fields(flat), "next": int(reply[1])}
            except (TypeError, ValueError):
                pass  # an odd field list or a fractional score: shown as it came
    return reply  # type: ignore[no-any-return]
