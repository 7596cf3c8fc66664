"""`<q>` in a vector: its queue's qualified name (`reference_impl.keys.QUEUE_REF`); `<q2>`,
its second queue's, in a flow across queues.

A flow's keys and records name queues (`parentKey` is `<prefix>:<queue>:<id>`, a parent's
`:dependencies` holds its children's full keys), and a vector's queue is named only when it
runs. A vector writes `<q>` for it. Here are the plain-value steps: finding `<q>` (the loader
marks such vectors) and swapping it with a name, in strings and in the keys and values of
mappings and lists at any depth. `conformance.run.binding` binds whole vectors and ops.
"""

from __future__ import annotations

from typing import Any

from reference_impl.keys import QUEUE_REF, QUEUE_REFS


def refs_in(value: Any) -> frozenset[str]:
    """Which of `QUEUE_REFS` occur in a vector value (its strings, mapping keys too)."""
    # One iterative walk: loading reads every vector's values this way, on every run.
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "<q" in item:
                found.update(ref for ref in QUEUE_REFS if ref in item)
                if len(found) == len(QUEUE_REFS):
                    break
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return frozenset(found)


def mentions(value: Any, refs: tuple[str, ...] = (QUEUE_REF,)) -> bool:
    """Whether any of `refs` occurs in a vector value."""
    return not refs_in(value).isdisjoint(refs)


def replaced(value: Any, old: str, new: str) -> Any:
    """`value` with every `old` in its strings (mapping keys too) replaced by `new`."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {replaced(k, old, new): replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [replaced(item, old, new) for item in value]
    if isinstance(value, tuple):
        return tuple(replaced(item, old, new) for item in value)
    return value


def put(value: Any, name: str) -> Any:
    """`value` with `<q>` replaced by the qualified name `name`."""
    return replaced(value, QUEUE_REF, name)


def taken_out(value: Any, name: str) -> Any:
    """`value` with the qualified name `name` written `<q>` again."""
    return replaced(value, name, QUEUE_REF)
