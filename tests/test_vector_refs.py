"""`<q>` in vectors (conformance.vectors.refs, conformance.run.binding): the queue's qualified
name put in everywhere a vector names it, and taken out again for two queues compared as one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.core.queues import QueueRef
from conformance.run import binding
from conformance.vectors import Vector, refs
from reference_impl import versions
from reference_impl.keys import BULLMQ, ECHOMQ
from reference_impl.ops import Add, Op, op_to_dict

PARENT = {"id": "p", "queue": "<q>"}


def _vector(given: dict[str, Any] | None = None, when: tuple[Op, ...] = (),
            returns: tuple[Any, ...] = (), keys: dict[str, Any] | None = None,
            on: tuple[int, ...] = ()) -> Vector:
    """A vector as loading builds it, `queue_refs` found as `load_file` finds it."""
    given, keys = given or {}, keys or {}
    values = [given, [op_to_dict(op) for op in when], list(returns), keys]
    return Vector("a/b", "d", (), given, when, returns, keys, None, None, Path("x.yaml"), 1,
                  queue_refs=refs.mentions(values, ("<q>", "<q2>")),
                  queues=2 if refs.mentions(values, ("<q2>",)) else 1, on=on)


def test_every_place_a_vector_names_its_queue_gets_the_real_name() -> None:
    vector = _vector(
        given={"p:dependencies": {"set": ["<q>:c0"]}},
        when=(Add("a", 1, {}, {"parent": PARENT}, "c"),),
        returns=("<q>:c",),
        keys={"p:processed": {"hash": {"<q>:c0": '"ok"'}},
              "c": {"hash": {"parent": {"json": {"id": "p", "queueKey": "<q>"}}}}})
    queue = QueueRef(BULLMQ, "bmqc-0-000001", versions.CURRENT)
    bound = binding.bound(vector, (queue,))
    name = "bull:bmqc-0-000001"
    assert bound.given == {"p:dependencies": {"set": [f"{name}:c0"]}}
    assert bound.when == (Add("a", 1, {}, {"parent": {"id": "p", "queue": name}}, "c"),)
    assert bound.returns == (f"{name}:c",)
    assert bound.keys == {"p:processed": {"hash": {f"{name}:c0": '"ok"'}},
                          "c": {"hash": {"parent": {"json": {"id": "p", "queueKey": name}}}}}


def test_the_name_follows_the_key_profile() -> None:
    vector = _vector(returns=("<q>:c",))
    queue = QueueRef(ECHOMQ, "bmqc-0-000001", versions.CURRENT)
    assert binding.bound(vector, (queue,)).returns == ("emq:{bmqc-0-000001}:c",)


def test_a_vector_without_refs_is_used_as_it_is() -> None:
    vector = _vector(given={"wait": {"list": ["1"]}}, returns=("1",))
    assert not vector.queue_refs
    assert binding.bound(vector, (QueueRef(BULLMQ, "bmqc-0-000001", versions.CURRENT),)) is vector


def test_unbound_takes_the_name_out_again() -> None:
    queue = QueueRef(BULLMQ, "bmqc-0-000002", versions.CURRENT)
    assert binding.unbound({"set": ["bull:bmqc-0-000002:c"]}, queue) == {"set": ["<q>:c"]}


def test_a_second_queue_is_bound_by_its_own_name_and_its_keys_by_full_name() -> None:
    # A flow across queues: `<q2>` in values, and `<q2>:<suffix>` keys, which bound are the
    # second queue's full key names (and seed there, `key_of`).
    vector = _vector(
        given={"<q2>:c": {"hash": {"parentKey": "<q>:p"}}, "p:dependencies": {"set": ["<q2>:c"]}},
        keys={"<q2>:wait": {"list": ["c"]}, "p:processed": {"hash": {"<q2>:c": "1"}}},
        on=(1,))
    assert vector.queues == 2
    first = QueueRef(BULLMQ, "bmqc-0-000001", versions.CURRENT)
    second = QueueRef(BULLMQ, "bmqc-0-000002", versions.CURRENT)
    bound = binding.bound(vector, (first, second))
    assert bound.given == {"bull:bmqc-0-000002:c": {"hash": {"parentKey": "bull:bmqc-0-000001:p"}},
                           "p:dependencies": {"set": ["bull:bmqc-0-000002:c"]}}
    assert bound.keys == {"bull:bmqc-0-000002:wait": {"list": ["c"]},
                          "p:processed": {"hash": {"bull:bmqc-0-000002:c": "1"}}}
    assert binding.key_of("bull:bmqc-0-000002:c", (first, second)) == "bull:bmqc-0-000002:c"
    assert binding.key_of("p:dependencies", (first, second)) == "bull:bmqc-0-000001:p:dependencies"
    # and back, for two queues compared as one
    assert binding.unbound({"bull:bmqc-0-000002:wait": ["bull:bmqc-0-000001:p"]}, first,
                           (second,)) == {"<q2>:wait": ["<q>:p"]}


def test_an_op_is_bound_to_both_queues() -> None:
    first = QueueRef(ECHOMQ, "bmqc-0-000001", versions.CURRENT)
    second = QueueRef(ECHOMQ, "bmqc-0-000002", versions.CURRENT)
    op = Add("a", 1, {}, {"parent": {"id": "p", "queue": "<q2>"}}, "c")
    assert binding.bound_op(op, (first, second)) == Add(
        "a", 1, {}, {"parent": {"id": "p", "queue": "emq:{bmqc-0-000002}"}}, "c")
