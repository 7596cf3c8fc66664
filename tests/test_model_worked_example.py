"""QueueModel against the worked example of RESEARCH.md §9: the seven adds, the first fetches,
and the saturated band with its zset tie order (§3, §4, §5, §8, §9).

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model or the score functions. T = 1700000000000 as in the worked example (§9).
"""

from __future__ import annotations

from model_helpers import T, events, none_ready

from reference_impl.model import QueueModel
from reference_impl.ops import Add, MoveToActive
from reference_impl.store import JsonText, Store, Str

FLOOR = 6963200020480000  # (T+5000)*4096
DELAY_OPTS = {"timestamp": T, "delay": 5000, "attempts": 0}


def seven_adds() -> QueueModel:
    """The seven adds of §9, job 2 created at N = T+10."""
    model = QueueModel()
    adds = [
        Add("normal", T, {"n": 1}),
        Add("delayed", T + 10, {"n": 2}, {"delay": 5000}),
        Add("delayedSameTsA", T, {"n": 3}, DELAY_OPTS),
        Add("delayedSameTsB", T, {"n": 4}, DELAY_OPTS),
        Add("prio1a", T, {"n": 5}, {"priority": 1}),
        Add("prio5", T, {"n": 6}, {"priority": 5}),
        Add("prio1b", T, {"n": 7}, {"priority": 1}),
    ]
    returned = [model.apply(op) for op in adds]
    assert returned == ["1", "2", "3", "4", "5", "6", "7"]
    return model


# --- §9 worked example ------------------------------------------------------------------


class TestWorkedExample:
    def test_counters_and_lists(self) -> None:
        s = seven_adds().store
        assert s.get("id") == "7"
        assert s.get("pc") == "3"
        assert s.keys["wait"].items == ["1"]  # type: ignore[union-attr]
        assert s.hget("meta", "opts.maxLenEvents") == "10000"
        assert not s.exists("active")
        assert not s.exists("paused")

    def test_delayed_scores(self) -> None:
        s = seven_adds().store
        assert s.zrange("delayed") == [
            ("3", 6963200020480000),  # (T+5000)*4096
            ("4", 6963200020480001),  # same band, bumped
            ("2", 6963200020520960),  # (T+10+5000)*4096
        ]

    def test_prioritized_scores(self) -> None:
        s = seven_adds().store
        assert s.zrange("prioritized") == [
            ("5", 4294967297),  # 1*2^32 + 1
            ("7", 4294967299),  # 1*2^32 + 3
            ("6", 21474836482),  # 5*2^32 + 2
        ]

    def test_marker(self) -> None:
        s = seven_adds().store
        assert s.zrange("marker") == [("0", 0), ("1", 1700000005000)]  # job 3's F

    def test_marker_went_down(self) -> None:
        model = QueueModel()
        model.apply(Add("normal", T, {"n": 1}))
        model.apply(Add("delayed", T + 10, {"n": 2}, {"delay": 5000}))
        assert model.store.zrange("marker") == [("0", 0), ("1", 1700000005010)]  # T+10+5000
        model.apply(Add("delayedSameTsA", T, {"n": 3}, DELAY_OPTS))
        assert model.store.zrange("marker") == [("0", 0), ("1", 1700000005000)]  # T+5000

    def test_job_hash(self) -> None:
        s = seven_adds().store
        assert s.keys["3"].fields == {  # type: ignore[union-attr]
            "name": "delayedSameTsA",
            "data": JsonText({"n": 3}),
            # opts pin only the keys given (client-opts rule)
            "opts": JsonText(
                {"timestamp": 1700000000000, "delay": 5000, "attempts": 0}, exact=False
            ),
            "timestamp": "1700000000000",
            "delay": "5000",
            "priority": "0",
        }
        assert s.hget("5", "priority") == "1"
        assert s.hget("5", "delay") == "0"
        assert s.hget("1", "delay") == "0"

    def test_events(self) -> None:
        assert events(seven_adds()) == [
            ["event", "added", "jobId", "1", "name", "normal"],
            ["event", "waiting", "jobId", "1"],
            ["event", "added", "jobId", "2", "name", "delayed"],
            ["event", "delayed", "jobId", "2", "delay", "1700000005010"],
            ["event", "added", "jobId", "3", "name", "delayedSameTsA"],
            ["event", "delayed", "jobId", "3", "delay", "1700000005000"],
            ["event", "added", "jobId", "4", "name", "delayedSameTsB"],
            ["event", "delayed", "jobId", "4", "delay", "1700000005000"],
            ["event", "added", "jobId", "5", "name", "prio1a"],
            ["event", "waiting", "jobId", "5"],
            ["event", "added", "jobId", "6", "name", "prio5"],
            ["event", "waiting", "jobId", "6"],
            ["event", "added", "jobId", "7", "name", "prio1b"],
            ["event", "waiting", "jobId", "7"],
        ]

    def test_key_set(self) -> None:
        s = seven_adds().store
        assert set(s.keys) == {
            "id", "pc", "wait", "delayed", "prioritized", "marker", "meta", "events",
            "1", "2", "3", "4", "5", "6", "7",
        }

    def test_first_fetch(self) -> None:
        model = seven_adds()
        n0 = len(events(model))
        result = model.apply(MoveToActive(now=T + 5000, token="tok", lock_duration=30000))
        assert result == {"job": "1", "ttl": 0, "next": 0}
        s = model.store
        # sweep 0 … 6963200020484095 promoted 3 and 4: wait [4,3,1], then the fetch took 1
        assert s.keys["wait"].items == ["4", "3"]  # type: ignore[union-attr]
        assert s.keys["active"].items == ["1"]  # type: ignore[union-attr]
        assert s.zrange("delayed") == [("2", 6963200020520960)]
        assert s.hget("1", "processedOn") == "1700000005000"
        assert s.hget("1", "ats") == "1"
        assert s.hget("3", "delay") == "0"
        assert s.hget("4", "delay") == "0"
        assert s.hget("2", "delay") == "5000"
        assert s.keys["1:lock"] == Str("tok", 30000)
        # stale "1": still job 3's F although job 3 left delayed
        assert s.zrange("marker") == [("0", 0), ("1", 1700000005000)]
        assert events(model)[n0:] == [
            ["event", "waiting", "jobId", "3", "prev", "delayed"],
            ["event", "waiting", "jobId", "4", "prev", "delayed"],
            ["event", "active", "jobId", "1", "prev", "waiting"],
        ]
        assert s.get("pc") == "3"

    def test_further_fetches_and_pc_deleted(self) -> None:
        model = seven_adds()
        now = T + 5000
        order = [model.apply(MoveToActive(now=now))["job"] for _ in range(6)]  # type: ignore[index]
        assert order == ["1", "3", "4", "5", "7", "6"]
        s = model.store
        # the last prioritized job was popped, but pc is deleted only by a fetch that finds none
        assert s.get("pc") == "3"
        assert model.apply(MoveToActive(now=now)) == none_ready(1700000005010)  # job 2's F
        assert not s.exists("pc")
        assert not s.exists("wait")
        assert not s.exists("prioritized")
        assert s.keys["active"].items == ["6", "7", "5", "4", "3", "1"]  # type: ignore[union-attr]
        assert s.zrange("marker") == [("0", 0), ("1", 1700000005000)]  # "1" still stale
        assert events(model)[-1] == ["event", "active", "jobId", "6", "prev", "waiting"]

    def test_counter_restarts_after_pc_deleted(self) -> None:
        model = seven_adds()
        for _ in range(7):
            model.apply(MoveToActive(now=T + 5000))
        assert model.apply(Add("again", T, {}, {"priority": 2})) == "8"
        assert model.store.zrange("prioritized") == [("8", 8589934593)]  # 2*2^32 + 1
        assert model.store.get("pc") == "1"


# --- saturation and zset tie order --------------------------------------------------------


def test_store_zrange_ties_by_member_bytes() -> None:
    store = Store()
    ceiling = 6963200020484095  # (T+5001)*4096 - 1
    store.zadd("delayed", ceiling, "f4095")
    store.zadd("delayed", ceiling, "9")
    store.zadd("delayed", ceiling, "10")
    store.zadd("delayed", ceiling - 1, "f4094")
    assert store.zrange("delayed") == [
        ("f4094", 6963200020484094),
        ("10", 6963200020484095),
        ("9", 6963200020484095),
        ("f4095", 6963200020484095),
    ]


def test_saturated_band_worked_example() -> None:
    # §9 table: 4096 custom-id jobs plus "9" and "10", all with one F
    # Given: f0..f4094 already added (id counter 4095) at F*S + i; this is the state 4095
    # same-F adds produce, seeded directly to keep the test fast.
    model = QueueModel()
    for i in range(4095):
        model.store.zadd("delayed", FLOOR + i, f"f{i}")
    model.store.set("id", "4095")
    model.apply(Add("j", T, opts={"delay": 5000}, job_id="f4095"))  # the 4096th job
    assert model.store.zrange("delayed")[-1] == ("f4095", 6963200020484095)  # F*S + 4095
    model.apply(Add("j", T, opts={"delay": 5000}, job_id="9"))
    model.apply(Add("j", T, opts={"delay": 5000}, job_id="10"))
    ordered = model.store.zrange("delayed")
    assert ordered[0] == ("f0", 6963200020480000)  # F*S
    assert ordered[4094] == ("f4094", 6963200020484094)  # F*S + 4094
    assert ordered[-3:] == [
        ("10", 6963200020484095),  # (F+1)*S - 1
        ("9", 6963200020484095),
        ("f4095", 6963200020484095),
    ]
    assert model.store.get("id") == "4098"
