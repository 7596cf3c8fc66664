"""Binding a vector's `<q>` (and `<q2>`) to the queues it runs in (`conformance.vectors.refs`).

`bound` puts the queues' real qualified names in everywhere a vector names them (the seed, the
ops, the expected replies and state) before the vector runs, so that every candidate sees real
keys and the comparison is plain. A flow across queues names its second queue's keys
`<q2>:<suffix>`: bound, that is the key's full name (`key_of`). `unbound` goes the other way,
for what two queues hold compared as one (`diff`) or a candidate compared with the model
(`properties`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from conformance.core.queues import QueueNames, QueueRef
from conformance.state.snapshot import Snapshot
from conformance.vectors import Vector
from conformance.vectors.refs import mentions, replaced, taken_out
from reference_impl.keys import QUEUE_REFS, KeyProfile
from reference_impl.ops import Op, op_from_dict, op_to_dict
from reference_impl.versions import Version


def qualified(queue: QueueRef) -> str:
    """The queue's qualified name, `<prefix>:<queue>`: BASE without its last colon."""
    return queue.base[:-1]


def _put_all(value: Any, queues: Sequence[QueueRef]) -> Any:
    for ref, queue in zip(QUEUE_REFS, queues, strict=False):
        value = replaced(value, ref, qualified(queue))
    return value


def fresh_queues(vector: Vector, profile: KeyProfile, names: QueueNames, protocol: Version
                 ) -> tuple[QueueRef, ...]:
    """The fresh queues a vector runs in: one, and a second for a flow across queues."""
    return tuple(QueueRef(profile, names.next(), protocol) for _ in range(vector.queues))


def op_queues(vector: Vector, queues: Sequence[QueueRef]) -> list[QueueRef]:
    """The queue each of the vector's ops runs on (`Vector.on`), of its `queues`."""
    return [queues[on] for on in vector.on] if vector.on else [queues[0]] * len(vector.when)


def bound(vector: Vector, queues: Sequence[QueueRef]) -> Vector:
    """`vector` with `<q>` replaced by the first of `queues`' qualified name, and `<q2>` by
    the second's (the vector itself when it names none)."""
    if not vector.queue_refs:
        return vector
    return replace(vector, given=_put_all(dict(vector.given), queues),
                   when=tuple(op_from_dict(_put_all(op_to_dict(op), queues))
                              for op in vector.when),
                   returns=_put_all(tuple(vector.returns), queues),
                   keys=_put_all(dict(vector.keys), queues))


def key_of(name: str, queues: Sequence[QueueRef]) -> str:
    """The Redis key of a bound vector's key name: the full name of another queue's key as it
    is, else a suffix of the first queue."""
    if any(name.startswith(other.base) for other in queues[1:]):
        return name
    return queues[0].key(name)


def bound_op(op: Op, queues: QueueRef | Sequence[QueueRef]) -> Op:
    """`op` with `<q>` (and `<q2>`) replaced by the `queues`' qualified names (the op itself
    when it names none): what a candidate is sent for an op the model applies as written."""
    raw = op_to_dict(op)
    if not mentions(raw, QUEUE_REFS):
        return op
    return op_from_dict(_put_all(raw, (queues,) if isinstance(queues, QueueRef) else queues))


def unbound(value: Any, queue: QueueRef, others: Sequence[QueueRef] = ()) -> Any:
    """`value` (a reply, a snapshot's keys) with `queue`'s qualified name written `<q>`, and
    the `others`' `<q2>`."""
    value = taken_out(value, qualified(queue))
    for ref, other in zip(QUEUE_REFS[1:], others, strict=False):
        value = replaced(value, qualified(other), ref)
    return value


def unbound_snapshot(snap: Snapshot, queue: QueueRef,
                     others: Sequence[QueueRef] = ()) -> Snapshot:
    """`snap` with its keys `unbound`."""
    return replace(snap, keys=unbound(snap.keys, queue, others))
