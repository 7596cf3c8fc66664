"""Flows across queues: the model's world of two queues (expectations computed by hand from the
scripts: every step on a parent builds its keys from the parent's queue key), a flow node in
another queue, the qualified name back to a queue name, the snapshot of two queues, and the
`shared-slot` need."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.core.queues import QueueRef
from conformance.servers import ServerInfo, capabilities
from conformance.state.snapshot import Snapshot, merged
from reference_impl import versions
from reference_impl.flows import flow_entries
from reference_impl.keys import BULLMQ, ECHOMQ, KeyProfile
from reference_impl.model import QueueModel
from reference_impl.ops import AddFlow, MoveToActive, Pause
from reference_impl.worker_ops import MoveToFinished, RemoveJob

T = 1_700_000_000_000


def _world() -> tuple[QueueModel, QueueModel]:
    first, second = QueueModel(), QueueModel(ref="<q2>")
    first.join(second)
    return first, second


def _flow(**child: Any) -> AddFlow:
    """Parent p in the op's queue, its child c in the second queue."""
    return AddFlow(T, {"name": "p", "jobId": "p", "data": {},
                       "children": [{"name": "c", "jobId": "c", "data": {}, "queue": "<q2>",
                                     **child}]})


def _child_done(first: QueueModel, second: QueueModel) -> None:
    first.apply(_flow())
    second.apply(MoveToActive(T + 1, "tok"))
    second.apply(MoveToFinished("c", T + 2, "completed", '"v"', "tok", {"count": -1}))


def test_the_child_lives_in_its_queue_and_names_the_parent_in_its_own() -> None:
    first, second = _world()
    assert first.apply(_flow()) == "p"
    assert second.store.hget("c", "parentKey") == "<q>:p"
    assert second.store.lrange("wait") == ["c"]
    assert first.store.smembers("p:dependencies") == ["<q2>:c"]
    assert first.store.zscore("waiting-children", "p") == T
    assert not second.store.exists("p") and not first.store.exists("c")


def test_a_child_done_in_its_queue_releases_the_parent_in_the_parent_queue() -> None:
    first, second = _world()
    _child_done(first, second)
    assert first.store.hgetall("p:processed") == {"<q2>:c": '"v"'}
    assert first.store.lrange("wait") == ["p"]
    assert first.store.zscore("marker", "0") == 0
    assert first.store.keys["events"].entries[-1] == [  # type: ignore[union-attr]
        "event", "waiting", "jobId", "p", "prev", "waiting-children"]
    assert second.store.zscore("completed", "c") == T + 2
    assert not second.store.exists("p:processed") and "p" not in second.store.lrange("wait")


@pytest.mark.parametrize(("paused", "marked"), [("first", False), ("second", True)])
def test_the_parent_queue_meta_decides_the_marker(paused: str, marked: bool) -> None:
    first, second = _world()
    first.apply(_flow())
    second.apply(MoveToActive(T + 1, "tok"))
    first.store.delete("marker")
    (first if paused == "first" else second).apply(Pause())
    second.apply(MoveToFinished("c", T + 2, "completed", '"v"', "tok", {"count": -1}))
    assert first.store.lrange("wait") == ["p"]
    assert (first.store.zscore("marker", "0") is not None) is marked


def test_removing_the_parent_removes_its_child_in_the_other_queue() -> None:
    first, second = _world()
    first.apply(_flow())
    assert first.apply(RemoveJob("p", True)) == 1
    assert not second.store.exists("c") and second.store.lrange("wait") == []
    assert second.store.keys["events"].entries[-1] == [  # type: ignore[union-attr]
        "event", "removed", "jobId", "c", "prev", "wait"]
    assert not first.store.exists("p")


def test_a_job_of_a_queue_outside_the_world_is_not_modelled() -> None:
    first, _ = _world()
    with pytest.raises(NotImplementedError, match="<q3>:p"):
        first.locate("<q3>:p")


def test_flow_entries_put_each_node_in_its_queue_and_name_the_parent_queue() -> None:
    op = AddFlow(T, {"name": "r", "jobId": "r", "data": {}, "children": [
        {"name": "m", "jobId": "m", "data": {}, "queue": "<q2>",
         "children": [{"name": "l", "jobId": "l", "data": {}}]}]})
    entries = flow_entries(op, "<q>")
    assert [(e.queue, e.op.job_id) for e in entries] == [("<q>", "r"), ("<q2>", "m"),
                                                          ("<q>", "l")]
    assert entries[1].op.opts["parent"] == {"id": "r", "queue": "<q>"}
    assert entries[2].op.opts["parent"] == {"id": "m", "queue": "<q2>"}


@pytest.mark.parametrize(("profile", "qualified", "name"),
                         [(BULLMQ, "bull:bmqc-1-000002", "bmqc-1-000002"),
                          (ECHOMQ, "emq:{bmqc-1-000002}", "bmqc-1-000002")])
def test_a_qualified_name_gives_the_queue_name_back(profile: KeyProfile, qualified: str,
                                                    name: str) -> None:
    assert profile.queue_of(qualified) == name
    assert profile.base(profile.queue_of(qualified)) == qualified + ":"


@pytest.mark.parametrize(("profile", "qualified"),
                         [(BULLMQ, "emq:x"), (ECHOMQ, "emq:x"), (BULLMQ, "bull")])
def test_a_name_of_another_profile_is_refused(profile: KeyProfile, qualified: str) -> None:
    with pytest.raises(ValueError):
        profile.queue_of(qualified)


def test_two_queues_snapshot_as_one_vector_names_them() -> None:
    second = QueueRef(BULLMQ, "bmqc-1-000002", versions.CURRENT)
    first_snap = Snapshot({"wait": {"list": ["p"]}}, (), ("bull:bmqc-1-000001:wait",))
    second_snap = Snapshot({"c": {"hash": {"a": "1"}}}, ("x:bmqc-1-000002",),
                           ("bull:bmqc-1-000002:c",), ("stray",))
    both = merged(first_snap, [(second_snap, second)])
    assert both.keys == {"wait": {"list": ["p"]}, "bull:bmqc-1-000002:c": {"hash": {"a": "1"}}}
    assert both.stray == ("x:bmqc-1-000002",)
    assert both.names == ("bull:bmqc-1-000001:wait", "bull:bmqc-1-000002:c")
    assert both.foreign == ("stray",)


def _server(cluster: bool) -> ServerInfo:
    return ServerInfo("local", "redis", "7.0.15", "redis://x", True, "", cluster=cluster)


def test_a_flow_across_queues_needs_one_slot_on_a_cluster() -> None:
    tagged_prefix = KeyProfile("tagged", "{bull}")
    assert capabilities.unmet(("shared-slot",), BULLMQ, _server(False)) is None
    assert capabilities.unmet(("shared-slot",), tagged_prefix, _server(True)) is None
    reason = capabilities.unmet(("shared-slot",), ECHOMQ, _server(True))
    assert reason is not None and "shared-slot" in reason and "echomq" in reason
    assert capabilities.unmet(("shared-slot",), BULLMQ, _server(True)) is not None


def test_the_loader_reads_which_queue_each_op_runs_on() -> None:
    from conformance.core.resources import vectors_dir
    from conformance.vectors import load_file

    loaded = {v.id: v for v in load_file(vectors_dir() / "flow-cross-queue.yaml").vectors}
    done = loaded["flow-cross-queue/child-completes-parent-released"]
    # FlowProducer.add on <q>, then a fetch and a completion in <q2>
    assert (done.queues, done.on) == (2, (0, 1, 1))
    assert done.needs == ("shared-slot",)
    removed = loaded["flow-cross-queue/remove-parent-with-child-elsewhere"]
    assert (removed.queues, removed.on) == (2, ())  # every op on <q>; its child in <q2>
