"""QueueModel adds, moveToActive with its sweep of due delayed jobs, and the paused and
concurrency-maxed queue (RESEARCH.md §2, §4, §5, §6, §7, §8); also that empty containers vanish
from the Store and that apply refuses what is not an op.

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model or the score functions. T = 1700000000000 as in the worked example (§9).
"""

from __future__ import annotations

import pytest
from model_helpers import T, events, got, none_ready

from reference_impl.model import QueueModel
from reference_impl.ops import Add, ChangeDelay, MoveToActive, Promote
from reference_impl.store import Store

# --- adds ---------------------------------------------------------------------------------


class TestAdd:
    def test_standard_add(self) -> None:
        model = QueueModel()
        assert model.apply(Add("n", T, {"a": 1})) == "1"
        s = model.store
        assert s.keys["wait"].items == ["1"]  # type: ignore[union-attr]
        assert s.zrange("marker") == [("0", 0)]
        assert s.hget("meta", "opts.maxLenEvents") == "10000"
        assert events(model) == [
            ["event", "added", "jobId", "1", "name", "n"],
            ["event", "waiting", "jobId", "1"],
        ]

    def test_lifo_standard_add_is_popped_next(self) -> None:
        model = QueueModel()
        model.apply(Add("a", T))
        model.apply(Add("b", T, opts={"lifo": True}))
        assert model.store.keys["wait"].items == ["1", "2"]  # type: ignore[union-attr]
        assert model.apply(MoveToActive(now=T)) == got("2")

    def test_lifo_ignored_for_prioritized(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 4, "lifo": True}))
        assert model.store.zrange("prioritized") == [("1", 17179869185)]  # 4*2^32 + 1

    def test_delayed_and_standard_markers_coexist(self) -> None:
        # PR #2389: the delayed marker must not overwrite the base marker
        model = QueueModel()
        model.apply(Add("a", T))
        model.apply(Add("b", T, opts={"delay": 3000}))
        assert model.store.zrange("marker") == [("0", 0), ("1", 1700000003000)]  # T+3000

    def test_delay_and_priority_goes_to_delayed(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 1000, "priority": 2}))
        s = model.store
        assert s.zrange("delayed") == [("1", 6963200004096000)]  # (T+1000)*4096
        assert not s.exists("prioritized")
        assert not s.exists("pc")
        assert s.hget("1", "priority") == "2"
        assert s.hget("1", "delay") == "1000"

    def test_negative_delay_routes_standard(self) -> None:
        # Node routes to addDelayedJob only for delay > 0
        model = QueueModel()
        model.apply(Add("n", T, opts={"delay": -1000}))
        assert model.store.keys["wait"].items == ["1"]  # type: ignore[union-attr]
        assert not model.store.exists("delayed")

    def test_duplicate_custom_id(self) -> None:
        model = QueueModel()
        assert model.apply(Add("first", T, {"x": 1}, job_id="myjob")) == "myjob"
        assert model.apply(Add("second", T + 1, {"x": 2}, {"priority": 3}, "myjob")) == "myjob"
        s = model.store
        assert s.get("id") == "2"  # INCR id on every add, duplicates included
        assert s.hget("myjob", "name") == "first"
        assert s.hget("myjob", "priority") == "0"
        assert s.keys["wait"].items == ["myjob"]  # type: ignore[union-attr]
        assert not s.exists("prioritized")
        assert not s.exists("pc")
        assert events(model) == [
            ["event", "added", "jobId", "myjob", "name", "first"],
            ["event", "waiting", "jobId", "myjob"],
            ["event", "duplicated", "jobId", "myjob"],
        ]
        # the next auto id skips the counter values used by the custom-id adds
        assert model.apply(Add("auto", T)) == "3"

    def test_priority_counter_wraps(self) -> None:
        model = QueueModel()
        model.store.set("pc", "4294967295")  # 2^32 - 1
        model.apply(Add("p", T, opts={"priority": 1}))
        assert model.store.get("pc") == "4294967296"
        assert model.store.zrange("prioritized") == [("1", 4294967296)]  # 1*2^32 + 0

    def test_wait_before_prioritized(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 1}))
        model.apply(Add("s", T))
        assert model.apply(MoveToActive(now=T)) == got("2")
        assert model.apply(MoveToActive(now=T)) == got("1")


# --- moveToActive and the sweep -----------------------------------------------------------


class TestMoveToActive:
    def test_empty_queue(self) -> None:
        assert QueueModel().apply(MoveToActive(now=T)) == none_ready(0)

    def test_token_zero_writes_no_lock(self) -> None:
        model = QueueModel()
        model.apply(Add("a", T))
        assert model.apply(MoveToActive(now=T, token="0")) == got("1")
        assert not model.store.exists("1:lock")
        assert model.store.hget("1", "ats") == "1"

    def test_activation_always_writes_base_marker(self) -> None:
        # §4: ZADD marker 0 "0" always after activating a job, to wake further workers
        model = QueueModel()
        model.apply(Add("a", T))
        model.apply(Add("b", T))
        model.store.delete("marker")
        assert model.apply(MoveToActive(now=T)) == got("1")
        assert model.store.zrange("marker") == [("0", 0)]

    def test_activation_marker_even_when_now_maxed(self) -> None:
        # concurrency 1, active empty: not maxed before the fetch, maxed after it
        model = QueueModel()
        model.store.hset("meta", "concurrency", "1")
        model.apply(Add("a", T))
        model.store.delete("marker")
        assert model.apply(MoveToActive(now=T)) == got("1")
        assert model.store.zrange("marker") == [("0", 0)]

    def test_next_band_not_promoted(self) -> None:
        # v5.8.6: a score of exactly (now+1)*4096 is not promoted
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 1}))
        assert model.store.zrange("delayed") == [("1", 6963200000004096)]  # (T+1)*4096
        assert model.apply(MoveToActive(now=T)) == none_ready(1700000000001)
        assert model.store.zrange("delayed") == [("1", 6963200000004096)]
        assert model.apply(MoveToActive(now=T + 1)) == got("1")

    def test_sweep_at_f_minus_1_then_f(self) -> None:
        # §9 table: jobs 1,2,3 share F; changeDelay moves 1 away; 2,3 sit at F*S+1, F*S+2
        model = QueueModel()
        for name in ("a", "b", "c"):
            model.apply(Add(name, T, opts={"delay": 5000}))
        assert model.apply(ChangeDelay("1", 10000, now=T)) == 0
        assert model.apply(MoveToActive(now=1700000004999)) == none_ready(1700000005000)
        assert model.store.zrange("delayed") == [
            ("2", 6963200020480001),
            ("3", 6963200020480002),
            ("1", 6963200040960000),  # (T+10000)*4096
        ]
        assert model.apply(MoveToActive(now=1700000005000)) == got("2")
        assert model.store.keys["wait"].items == ["3"]  # type: ignore[union-attr]
        assert model.store.zrange("delayed") == [("1", 6963200040960000)]

    def test_sweep_promotes_prioritized_with_fresh_counter(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 2}))  # c=1 -> 2*2^32+1
        model.apply(Add("d", T, opts={"delay": 10, "priority": 2}))
        model.apply(Add("s", T))
        assert model.apply(MoveToActive(now=T + 10)) == got("3")
        assert model.store.zrange("prioritized") == [
            ("1", 8589934593),  # 2*2^32 + 1
            ("2", 8589934594),  # 2*2^32 + 2 (INCR pc during the sweep)
        ]
        assert model.store.hget("2", "delay") == "0"

    def test_batch_of_1000(self) -> None:
        model = QueueModel()
        for i in range(1001):
            model.apply(Add(f"j{i}", T, opts={"delay": 1}))  # F = T+1, positions 0..1000
        n0 = len(events(model))
        assert model.apply(MoveToActive(now=T + 1)) == got("1")
        s = model.store
        # 1000 promoted (ids 1..1000), the fetch took 1
        assert s.llen("wait") == 999
        assert s.zrange("delayed") == [("1001", 6963200000005096)]  # (T+1)*4096 + 1000
        promoted = [e for e in events(model)[n0:] if e[-1] == "delayed"]
        assert len(promoted) == 1000
        assert promoted[0] == ["event", "waiting", "jobId", "1", "prev", "delayed"]
        assert promoted[-1] == ["event", "waiting", "jobId", "1000", "prev", "delayed"]
        assert s.keys["wait"].items[0] == "1000"  # type: ignore[union-attr]
        assert s.keys["wait"].items[-1] == "2"  # type: ignore[union-attr]
        # the next fetch sweeps the remaining job
        assert model.apply(MoveToActive(now=T + 1)) == got("2")
        assert not s.exists("delayed")
        assert s.keys["wait"].items[0] == "1001"  # type: ignore[union-attr]

    def test_promote_due_returns_score_order(self) -> None:
        model = QueueModel()
        model.apply(Add("late", T, opts={"delay": 20}))
        model.apply(Add("early", T, opts={"delay": 10}))
        model.apply(Add("early2", T + 5, opts={"delay": 5}))  # same F = T+10, bumped
        assert model.promote_due(T + 20, False) == ["2", "3", "1"]
        assert model.store.keys["wait"].items == ["1", "3", "2"]  # type: ignore[union-attr]
        assert model.store.zrange("marker")[0] == ("0", 0)


# --- paused / maxed -----------------------------------------------------------------------


class TestPaused:
    def test_paused_suppresses_base_marker_only(self) -> None:
        model = QueueModel()
        model.store.hset("meta", "paused", "1")
        model.apply(Add("a", T))
        model.apply(Add("p", T, opts={"priority": 1}))
        s = model.store
        assert s.keys["wait"].items == ["1"]  # v6: stays in wait
        assert not s.exists("paused")
        assert s.zrange("prioritized") == [("2", 4294967297)]
        assert not s.exists("marker")
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert s.zrange("marker") == [("1", 1700000005000)]  # no paused check for "1"

    def test_paused_fetch_sweeps_but_returns_nothing(self) -> None:
        model = QueueModel()
        model.store.hset("meta", "paused", "1")
        model.apply(Add("a", T))
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.apply(MoveToActive(now=T + 5000)) == none_ready(0)
        s = model.store
        assert s.keys["wait"].items == ["2", "1"]  # type: ignore[union-attr]
        assert not s.exists("delayed")
        assert s.zrange("marker") == [("1", 1700000005000)]
        assert not s.exists("active")

    def test_paused_promote(self) -> None:
        model = QueueModel()
        model.store.hset("meta", "paused", "1")
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.apply(Promote("1")) == 0
        assert model.store.zrange("marker") == [("1", 1700000005000)]
        assert model.store.keys["wait"].items == ["1"]  # type: ignore[union-attr]

    def test_concurrency_maxed(self) -> None:
        model = QueueModel()
        model.store.hset("meta", "concurrency", "1")
        model.store.lpush("active", "x")
        model.apply(Add("a", T))
        assert not model.store.exists("marker")
        assert model.apply(MoveToActive(now=T)) == none_ready(0)


# --- the Store and apply -----------------------------------------------------------------


def test_empty_containers_vanish() -> None:
    store = Store()
    store.lpush("wait", "1")
    assert store.rpop("wait") == "1"
    assert not store.exists("wait")
    store.zadd("delayed", 5, "a")
    assert store.zpopmin("delayed") == "a"
    assert not store.exists("delayed")


@pytest.mark.parametrize("bad", ["normal"])
def test_apply_rejects_unknown_op(bad: str) -> None:
    with pytest.raises(TypeError):
        QueueModel().apply(bad)  # type: ignore[arg-type]
