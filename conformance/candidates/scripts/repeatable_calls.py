"""The legacy repeatable job ops' script calls for `scripts:DIR` (5.x): KEYS layouts and ARGV
as npm bullmq 5.81.5's client sends them (`Repeat.updateRepeatableJob`,
`Repeat.removeRepeatable`), with the keys the client computes
(`reference_impl.repeatable_ops`). removeRepeatable's ARGV before 5.10.0 is the one the 5.0.0
client sent: no repeat key, BASE third.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.candidates.scripts.worker_calls import Caller, pack
from conformance.core.queues import QueueRef
from reference_impl import versions
from reference_impl.ops import Result
from reference_impl.repeatable_ops import (
    AddRepeatableJob,
    RemoveRepeatable,
    UpdateRepeatableJobMillis,
    concat_key,
    legacy_job_id_prefix,
    removal_member,
    repeat_key,
)

#: KEYS of each repeatable job script, by name (the file is `<name>-<len(keys)>.lua`).
REPEATABLE_KEYS: dict[str, tuple[str, ...]] = {
    "addRepeatableJob": ("repeat", "delayed"),
    "updateRepeatableJobMillis": ("repeat",),
    "removeRepeatable": ("repeat", "delayed", "events"),
}
#: removeRepeatable-2, before 5.10.4 (the events key came from BASE).
OLDER_REMOVE_KEYS = ("repeat", "delayed")


def _add(call: Caller, queue: QueueRef, op: AddRepeatableJob) -> Any:
    # The options map as the client packs it: every entry, an undefined one as nil (which
    # cmsgpack leaves out of the Lua table); an end date of 0 counts as none.
    packed = {"name": op.name, "endDate": op.end_date or None, "tz": op.tz,
              "pattern": op.pattern, "every": op.every}
    return call("addRepeatableJob", [op.next_millis, pack(packed), concat_key(op),
                                     repeat_key(op), queue.base], {})


def _update(call: Caller, queue: QueueRef, op: UpdateRepeatableJobMillis) -> Any:
    return call("updateRepeatableJobMillis", [op.next_millis, repeat_key(op),
                                              concat_key(op)], {})


def _remove(call: Caller, queue: QueueRef, op: RemoveRepeatable) -> Any:
    prefix = legacy_job_id_prefix(op)
    if queue.protocol < versions.REPEAT_KEY_HASH:
        return call("removeRepeatable", [prefix, concat_key(op), queue.base], {})
    return call("removeRepeatable", [prefix, removal_member(op), repeat_key(op),
                                     queue.base], {})


CALLS: dict[type, Callable[[Caller, QueueRef, Any], Any]] = {
    AddRepeatableJob: _add,
    UpdateRepeatableJobMillis: _update,
    RemoveRepeatable: _remove,
}


def normalized(op: Any, reply: Any) -> Result:
    """The scripts' replies are the ops' results as they come: a key, "", 0 or 1."""
    return reply  # type: ignore[no-any-return]
