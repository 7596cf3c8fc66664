"""QueueModel changes to a queued job: promote, changeDelay and changePriority, with the scores,
markers and events they write (RESEARCH.md §3, §4, §5, §6, §7.3, §8).

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model or the score functions. T = 1700000000000 as in the worked example (§9).
"""

from __future__ import annotations

from fractions import Fraction

from model_helpers import T, events, got, none_ready

from reference_impl.model import QueueModel
from reference_impl.ops import Add, ChangeDelay, ChangePriority, MoveToActive, Promote

# --- promote ------------------------------------------------------------------------------


class TestPromote:
    def test_promote_then_not_in_state(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.apply(Promote("1")) == 0
        s = model.store
        assert s.keys["wait"].items == ["1"]  # type: ignore[union-attr]
        assert not s.exists("delayed")
        assert s.hget("1", "delay") == "0"
        assert s.zrange("marker") == [("0", 0), ("1", 1700000005000)]  # "1" not refreshed
        assert events(model)[-1] == ["event", "waiting", "jobId", "1", "prev", "delayed"]
        n = len(events(model))
        assert model.apply(Promote("1")) == -3
        assert len(events(model)) == n
        assert s.keys["wait"].items == ["1"]  # type: ignore[union-attr]

    def test_promote_unknown(self) -> None:
        assert QueueModel().apply(Promote("42")) == -3

    def test_promote_prioritized(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 2}))  # c=1
        model.apply(Add("d", T, opts={"delay": 5000, "priority": 2}))
        assert model.apply(Promote("2")) == 0
        assert model.store.zrange("prioritized") == [
            ("1", 8589934593),  # 2*2^32 + 1
            ("2", 8589934594),  # 2*2^32 + 2
        ]
        assert model.store.get("pc") == "2"


# --- changeDelay --------------------------------------------------------------------------


class TestChangeDelay:
    def test_missing_job(self) -> None:
        assert QueueModel().apply(ChangeDelay("1", 1000, now=T)) == -1

    def test_not_delayed(self) -> None:
        model = QueueModel()
        model.apply(Add("a", T))
        n = len(events(model))
        assert model.apply(ChangeDelay("1", 1000, now=T)) == -3
        assert len(events(model)) == n
        assert model.store.hget("1", "delay") == "0"
        assert not model.store.exists("delayed")

    def test_own_band_bumps(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.store.zrange("delayed") == [("1", 6963200020480000)]
        assert model.apply(ChangeDelay("1", 5000, now=T)) == 0
        # computed before the ZREM, so it bumps past its own old score: F*S+1
        assert model.store.zrange("delayed") == [("1", 6963200020480001)]
        # only delayed adds so far: no "0" marker
        assert model.store.zrange("marker") == [
            ("1", Fraction(6963200020480001, 4096)),  # 1700000005000 + 1/4096
        ]
        assert events(model)[-1] == ["event", "delayed", "jobId", "1", "delay", "1700000005000"]

    def test_uses_now_not_timestamp(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.apply(ChangeDelay("1", 2000, now=T + 100)) == 0
        assert model.store.zrange("delayed") == [("1", 6963200008601600)]  # (T+2100)*4096
        assert model.store.hget("1", "delay") == "2000"
        assert model.store.zrange("marker")[-1] == ("1", 1700000002100)  # moved down

    def test_zero_delay_uses_now(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 5000}))
        assert model.apply(ChangeDelay("1", 0, now=T + 100)) == 0
        assert model.store.zrange("delayed") == [("1", 6963200000409600)]  # (T+100)*4096
        assert events(model)[-1] == ["event", "delayed", "jobId", "1", "delay", "1700000000100"]

    def test_fractional_marker_and_truncated_next(self) -> None:
        # §9 table: jobs 1,2,3 with the same F, then changeDelay(1, 10000, now=T)
        model = QueueModel()
        for name in ("a", "b", "c"):
            model.apply(Add(name, T, opts={"delay": 5000}))
        assert model.apply(ChangeDelay("1", 10000, now=T)) == 0
        s = model.store
        assert s.zrange("delayed")[0] == ("2", 6963200020480001)  # F*S+1
        assert s.zrange("marker") == [("1", Fraction(6963200020480001, 4096))]  # head F*S+1
        assert s.hget("1", "delay") == "10000"
        assert events(model)[-1] == ["event", "delayed", "jobId", "1", "delay", "1700000010000"]
        assert model.apply(MoveToActive(now=T)) == none_ready(1700000005000)


# --- changePriority -----------------------------------------------------------------------


class TestChangePriority:
    def test_missing_job(self) -> None:
        assert QueueModel().apply(ChangePriority("9", 3)) == -1

    def test_lifo_exact_tier_front(self) -> None:
        model = QueueModel()
        model.apply(Add("a", T))
        model.store.delete("marker")  # to observe that no marker is written
        assert model.apply(ChangePriority("1", 3, lifo=True)) == 0
        s = model.store
        assert s.zrange("prioritized") == [("1", 12884901888)]  # 3*2^32, no counter
        assert not s.exists("pc")
        assert not s.exists("marker")
        assert not s.exists("wait")
        assert s.hget("1", "priority") == "3"

    def test_lifo_goes_in_front_of_tier(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 3}))  # 3*2^32+1
        model.apply(Add("q", T, opts={"priority": 3}))  # 3*2^32+2
        assert model.apply(ChangePriority("2", 3, lifo=True)) == 0
        assert model.store.zrange("prioritized") == [("2", 12884901888), ("1", 12884901889)]
        assert model.store.get("pc") == "2"

    def test_fresh_counter_without_lifo(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 1}))  # c=1
        model.apply(Add("q", T, opts={"priority": 1}))  # c=2
        assert model.apply(ChangePriority("1", 1)) == 0
        assert model.store.zrange("prioritized") == [
            ("2", 4294967298),  # 2^32 + 2
            ("1", 4294967299),  # 2^32 + 3
        ]
        assert model.store.get("pc") == "3"

    def test_back_to_wait(self) -> None:
        model = QueueModel()
        model.apply(Add("p", T, opts={"priority": 2}))
        model.store.delete("marker")
        assert model.apply(ChangePriority("1", 0)) == 0
        s = model.store
        assert s.keys["wait"].items == ["1"]  # type: ignore[union-attr]
        assert not s.exists("prioritized")
        assert s.zrange("marker") == [("0", 0)]
        assert s.hget("1", "priority") == "0"

    def test_back_to_wait_lifo_rpush(self) -> None:
        model = QueueModel()
        model.apply(Add("a", T))
        model.apply(Add("p", T, opts={"priority": 2}))
        assert model.apply(ChangePriority("2", 0, lifo=True)) == 0
        assert model.store.keys["wait"].items == ["1", "2"]  # type: ignore[union-attr]
        assert model.apply(MoveToActive(now=T)) == got("2")

    def test_delayed_job_only_field(self) -> None:
        model = QueueModel()
        model.apply(Add("d", T, opts={"delay": 5000}))
        n = len(events(model))
        assert model.apply(ChangePriority("1", 7)) == 0
        assert model.store.zrange("delayed") == [("1", 6963200020480000)]
        assert not model.store.exists("prioritized")
        assert model.store.hget("1", "priority") == "7"
        assert len(events(model)) == n  # no event
