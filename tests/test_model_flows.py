"""QueueModel flows (reference_impl.flows, flow_removal): a child's link, a parent's release,
the failure policies, FlowProducer's insert, and removal.

Expected states are literals computed by hand from the official 6.7.0 scripts (addParentJob-6,
the add scripts, moveToFinished-14 with moveChildFromDependenciesIfNeeded, removeJob-2);
nothing is derived by calling the model's helpers. T = 1700000000000; `<q>` is the queue.
"""

from __future__ import annotations

from typing import Any

import pytest
from model_helpers import T, events, got

from reference_impl import versions
from reference_impl.model import QueueModel
from reference_impl.ops import Add, AddFlow, AddParentJob, MoveToActive
from reference_impl.store import JsonText
from reference_impl.worker_ops import (
    GetDependencyCounts,
    MoveToFinished,
    MoveToWaitingChildren,
    RemoveChildDependency,
    RemoveJob,
    RemoveUnprocessedChildren,
)

NOW = T + 60000
KEEP = {"count": -1}


def child(name: str, job_id: str | None = None, parent: str = "p", **opts: Any) -> Add:
    return Add(name, T, {}, {"parent": {"id": parent, "queue": "<q>"}, **opts}, job_id)


def with_parent(**opts: Any) -> QueueModel:
    model = QueueModel()
    assert model.apply(AddParentJob("report", T, {}, opts, "p")) == "p"
    return model


def taken(model: QueueModel, job_id: str) -> None:
    assert model.apply(MoveToActive(T + 100)) == got(job_id)


def complete(job_id: str, value: str = '"ok"', **kwargs: Any) -> MoveToFinished:
    kwargs.setdefault("keep_jobs", KEEP)
    return MoveToFinished(job_id, NOW, "completed", value, **kwargs)


def fail(job_id: str, **kwargs: Any) -> MoveToFinished:
    kwargs.setdefault("keep_jobs", KEEP)
    return MoveToFinished(job_id, NOW, "failed", "boom", attempts=1, **kwargs)


class TestAdding:
    def test_parent_waits_for_children(self) -> None:
        model = with_parent(delay=5000)
        s = model.store
        assert s.zrange("waiting-children") == [("p", T)]
        assert s.hget("p", "delay") == "5000"
        assert not s.exists("delayed") and not s.exists("wait") and not s.exists("marker")
        assert events(model) == [["event", "added", "jobId", "p", "name", "report"],
                                 ["event", "waiting-children", "jobId", "p"]]

    def test_child_link(self) -> None:
        model = with_parent()
        assert model.apply(child("a", fpof=True)) == "2"
        s = model.store
        assert s.hget("2", "parentKey") == "<q>:p"
        assert s.hget("2", "parent") == JsonText({"id": "p", "queueKey": "<q>", "fpof": True})
        assert s.smembers("p:dependencies") == ["<q>:2"]
        assert s.lrange("wait") == ["2"]

    def test_missing_parent_writes_nothing(self) -> None:
        model = QueueModel()
        assert model.apply(child("a", parent="ghost")) == -5
        assert model.store.keys == {}

    def test_duplicate_under_another_parent(self) -> None:
        model = with_parent()
        model.apply(AddParentJob("two", T, {}, {}, "p2"))
        model.apply(child("a", "c"))
        assert model.apply(child("a", "c", parent="p2")) == -7
        assert model.store.hget("c", "parentKey") == "<q>:p"
        assert not model.store.exists("p2:dependencies")
        assert model.store.get("id") == "4"

    @pytest.mark.parametrize(("protocol", "adopted"), [((6, 5, 1), True), ((6, 4, 0), False)])
    def test_duplicate_whose_parent_is_gone(self, protocol: versions.Version,
                                            adopted: bool) -> None:
        model = QueueModel(protocol=protocol)
        model.store.hset("c", "parentKey", "<q>:gone")
        model.apply(AddParentJob("two", T, {}, {}, "p2"))
        assert model.apply(child("a", "c", parent="p2")) == "c"
        assert model.store.hget("c", "parentKey") == ("<q>:p2" if adopted else "<q>:gone")
        assert model.store.smembers("p2:dependencies") == (["<q>:c"] if adopted else [])


class TestChildEnd:
    def test_last_child_releases_parent_to_the_head_of_wait(self) -> None:
        model = with_parent()
        model.apply(child("a"))
        taken(model, "2")
        model.apply(Add("late", T, {}, {}))
        assert model.apply(complete("2", '{"n":1}')) == 0
        s = model.store
        assert s.hgetall("p:processed") == {"<q>:2": '{"n":1}'}
        assert not s.exists("p:dependencies") and not s.exists("waiting-children")
        assert s.lrange("wait") == ["3", "p"]  # RPUSH: p is taken next
        assert events(model)[-2:] == [
            ["event", "waiting", "jobId", "p", "prev", "waiting-children"],
            ["event", "completed", "jobId", "2", "returnvalue", '{"n":1}', "prev", "active"]]

    def test_delayed_parent_has_no_band(self) -> None:
        model = with_parent(delay=5000)
        model.apply(child("a"))
        taken(model, "2")
        model.apply(complete("2"))
        assert model.store.zrange("delayed") == [("p", (NOW + 5000) * 0x1000)]
        # "0" from the child's add and its fetch; "1" at the parent's fire time
        assert model.store.zrange("marker") == [("0", 0), ("1", NOW + 5000)]

    def test_no_policy_leaves_the_parent_waiting(self) -> None:
        model = with_parent()
        model.apply(child("a"))
        taken(model, "2")
        model.apply(fail("2"))
        assert model.store.smembers("p:dependencies") == ["<q>:2"]
        assert model.store.zrange("waiting-children") == [("p", T)]

    def test_fpof_releases_with_defa(self) -> None:
        model = with_parent(priority=2)
        model.apply(child("a", fpof=True))
        model.apply(child("b"))
        taken(model, "2")
        model.apply(fail("2"))
        s = model.store
        assert s.zrange("p:unsuccessful") == [("<q>:2", NOW)]
        assert s.hget("p", "defa") == "child <q>:2 failed"
        assert s.zrange("prioritized") == [("p", 2 * 2**32 + 1)]
        assert s.smembers("p:dependencies") == ["<q>:3"]

    def test_cpof_releases_with_children_pending(self) -> None:
        model = with_parent()
        model.apply(child("a", cpof=True))
        model.apply(child("b"))
        taken(model, "2")
        model.apply(fail("2"))
        assert model.store.hgetall("p:failed") == {"<q>:2": "boom"}
        assert model.store.lrange("wait") == ["3", "p"]

    @pytest.mark.parametrize(("flag", "failed"), [("idof", {"<q>:2": "boom"}), ("rdof", {})])
    def test_idof_rdof(self, flag: str, failed: dict[str, str]) -> None:
        model = with_parent()
        model.apply(child("a", **{flag: True}))
        taken(model, "2")
        model.apply(fail("2"))
        assert model.store.hgetall("p:failed") == failed
        assert model.store.lrange("wait") == ["p"]

    def test_removed_failed_child_releases_to_wait_ignoring_priority(self) -> None:
        model = with_parent(priority=2)
        model.apply(child("a"))
        taken(model, "2")
        model.apply(fail("2", keep_jobs={"count": 0}))
        assert not model.store.exists("2")
        assert model.store.lrange("wait") == ["p"]
        assert not model.store.exists("prioritized")


class TestFlowInsert:
    def test_completed_child_first(self) -> None:
        tree = {"name": "p", "jobId": "p", "data": {},
                "children": [{"name": "c1", "jobId": "c1", "data": {}},
                             {"name": "c2", "jobId": "c2", "data": {}}]}
        for protocol, parent_in in (((6, 7, 0), "waiting-children"), ((6, 4, 0), "wait")):
            model = QueueModel(protocol=protocol)
            model.store.hset("c1", "returnvalue", '"ok"')
            model.store.zadd("completed", T, "c1")
            assert model.apply(AddFlow(T, tree)) == "p"
            assert model.store.hgetall("p:processed") == {"<q>:c1": '"ok"'}
            assert model.store.smembers("p:dependencies") == ["<q>:c2"]
            where = ("waiting-children" if model.store.zrange("waiting-children")
                     else "wait" if "p" in model.store.lrange("wait") else "")
            assert where == parent_in, protocol


class TestJobOps:
    def test_move_to_waiting_children_and_counts(self) -> None:
        model = QueueModel()
        model.apply(Add("report", T, {}, {}, "p"))
        taken(model, "p")
        assert model.apply(MoveToWaitingChildren("p", NOW)) == 1  # nothing pending
        model.apply(child("a", "c"))
        assert model.apply(MoveToWaitingChildren("p", NOW, token="other")) == -6
        assert model.apply(MoveToWaitingChildren("p", NOW)) == 0
        assert model.store.zrange("waiting-children") == [("p", NOW)]
        assert not model.store.exists("p:lock") and not model.store.exists("active")
        assert model.apply(GetDependencyCounts("p", ("unprocessed", "processed"))) == [1, 0]

    def test_remove_child_dependency(self) -> None:
        model = with_parent(priority=4)
        model.apply(child("a", "c"))
        assert model.apply(RemoveChildDependency("c", "<q>:p")) == 0
        assert model.store.hget("c", "parentKey") is None
        assert model.store.lrange("wait") == ["c", "p"]
        assert model.apply(RemoveChildDependency("c", "<q>:p")) == 1
        assert model.apply(RemoveChildDependency("c", "<q>:x")) == -5


class TestRemoval:
    def test_remove_parent_with_children(self) -> None:
        model = with_parent()
        model.apply(child("a", "c1"))
        model.apply(child("b", "c2"))
        taken(model, "c1")
        model.apply(complete("c1"))
        assert model.apply(RemoveJob("p")) == 1
        assert [k for k in model.store.keys if k not in ("events", "id", "meta", "marker")] == []
        assert [e[1:4] + e[5:] for e in events(model)[-4:]] == [
            ["removed", "jobId", "c1", "completed"],
            ["waiting", "jobId", "p", "waiting-children"],
            ["removed", "jobId", "c2", "wait"],
            ["removed", "jobId", "p", "wait"]]

    def test_locked_child_blocks(self) -> None:
        model = with_parent()
        model.apply(child("a", "c1"))
        taken(model, "c1")
        assert model.apply(RemoveJob("p")) == 0
        assert model.apply(RemoveJob("p", remove_children=False)) == 1
        assert model.store.hget("c1", "parentKey") == "<q>:p"

    def test_remove_unprocessed_children_spares_locked(self) -> None:
        model = with_parent()
        model.apply(child("a", "c1"))
        taken(model, "c1")
        assert model.apply(RemoveUnprocessedChildren("p")) is None
        assert model.store.smembers("p:dependencies") == ["<q>:c1"]
