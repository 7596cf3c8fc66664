"""Binding a vector's `<q>` to the queue it runs in (`conformance.vectors.refs`).

`bound` puts the queue's real qualified name in everywhere a vector names it (the seed, the
ops, the expected replies and state) before the vector runs, so that every candidate sees real
keys and the comparison is plain. `unbound` goes the other way, for what two queues hold
compared as one (`diff`) or a candidate compared with the model (`properties`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from conformance.core.queues import QueueRef
from conformance.state.snapshot import Snapshot
from conformance.vectors import Vector
from conformance.vectors.refs import mentions, put, taken_out
from reference_impl.ops import Op, op_from_dict, op_to_dict


def qualified(queue: QueueRef) -> str:
    """The queue's qualified name, `<prefix>:<queue>`: BASE without its last colon."""
    return queue.base[:-1]


def bound(vector: Vector, queue: QueueRef) -> Vector:
    """`vector` with `<q>` replaced by `queue`'s qualified name (the vector itself when it
    has none)."""
    if not vector.queue_refs:
        return vector
    name = qualified(queue)
    return replace(vector, given=put(dict(vector.given), name),
                   when=tuple(op_from_dict(put(op_to_dict(op), name)) for op in vector.when),
                   returns=put(tuple(vector.returns), name), keys=put(dict(vector.keys), name))


def bound_op(op: Op, queue: QueueRef) -> Op:
    """`op` with `<q>` replaced by `queue`'s qualified name (the op itself when it has none):
    what a candidate is sent for an op the model applies as written."""
    raw = op_to_dict(op)
    if not mentions(raw):
        return op
    return op_from_dict(put(raw, qualified(queue)))


def unbound(value: Any, queue: QueueRef) -> Any:
    """`value` (a reply, a snapshot's keys) with `queue`'s qualified name written `<q>`."""
    return taken_out(value, qualified(queue))


def unbound_snapshot(snap: Snapshot, queue: QueueRef) -> Snapshot:
    """`snap` with its keys `unbound`."""
    return replace(snap, keys=unbound(snap.keys, queue))
