"""`<q>` in a vector: its queue's qualified name (`reference_impl.keys.QUEUE_REF`).

A flow's keys and records name queues (`parentKey` is `<prefix>:<queue>:<id>`, a parent's
`:dependencies` holds its children's full keys), and a vector's queue is named only when it
runs. A vector writes `<q>` for it; `bound` puts the real name in everywhere (the seed, the
ops, the expected replies and state) before the vector runs, so that every candidate sees
real keys and the comparison is plain.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from reference_impl.keys import QUEUE_REF
from reference_impl.ops import Op, op_from_dict, op_to_dict

if TYPE_CHECKING:  # the package imports this module
    from conformance.core.queues import QueueRef
    from conformance.state.snapshot import Snapshot
    from conformance.vectors import Vector


def mentions(value: Any) -> bool:
    """Whether `QUEUE_REF` occurs in a vector value (strings, and the keys and values of
    mappings and lists, at any depth)."""
    if isinstance(value, str):
        return QUEUE_REF in value
    if isinstance(value, dict):
        return any(mentions(k) or mentions(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(mentions(item) for item in value)
    return False


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {_replace(k, old, new): _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(item, old, new) for item in value]
    if isinstance(value, tuple):
        return tuple(_replace(item, old, new) for item in value)
    return value


def _put(value: Any, name: str) -> Any:
    return _replace(value, QUEUE_REF, name)


def bound(vector: Vector, queue: QueueRef) -> Vector:
    """`vector` with `<q>` replaced by `queue`'s qualified name (the vector itself when it
    has none)."""
    if not vector.queue_refs:
        return vector
    name = queue.base[:-1]
    return replace(vector, given=_put(dict(vector.given), name),
                   when=tuple(op_from_dict(_put(op_to_dict(op), name)) for op in vector.when),
                   returns=_put(tuple(vector.returns), name), keys=_put(dict(vector.keys), name))


def bound_op(op: Op, queue: QueueRef) -> Op:
    """`op` with `<q>` replaced by `queue`'s qualified name (the op itself when it has none):
    what a candidate is sent for an op the model applies as written."""
    raw = op_to_dict(op)
    if not mentions(raw):
        return op
    return op_from_dict(_put(raw, queue.base[:-1]))


def unbound(value: Any, queue: QueueRef) -> Any:
    """`value` (a reply, a snapshot's keys) with `queue`'s qualified name written `<q>` again:
    what two queues hold compared as if they were one."""
    return _replace(value, queue.base[:-1], QUEUE_REF)


def unbound_snapshot(snap: Snapshot, queue: QueueRef) -> Snapshot:
    """`snap` with its keys `unbound`."""
    return replace(snap, keys=unbound(snap.keys, queue))
