"""QueueModel moveToFinished-14 retention and metrics (RESEARCH-WORKER.md §1.2, §1.3): the
keepJobs rows and the per-minute metrics. Expected states are literals computed by hand from
the protocol, never by calling the model's helpers.

T = 1700000000000 lies 20 s into its minute (T // 60000 = 28333333, remainder 20000).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from model_helpers import DONE, T, active, events, finish, seed_old

from reference_impl.model import QueueModel


class TestRetention:
    @pytest.mark.parametrize(("keep", "left"), [
        ({"count": 2}, [("e", 1699999990000), ("1", 1700000000000)]),
        ({"count": 1}, [("1", 1700000000000)]),
        ({"age": 30}, [("d", 1699999980000), ("e", 1699999990000), ("1", 1700000000000)]),
        ({"age": 30, "limit": 1}, [("a", 1699999950000), ("b", 1699999960000),
                                   ("d", 1699999980000), ("e", 1699999990000),
                                   ("1", 1700000000000)]),
        ({"age": 30, "count": 2}, [("e", 1699999990000), ("1", 1700000000000)]),
        ({"age": 0.02}, [("1", 1700000000000)]),
        ({"count": -1}, [("a", 1699999950000), ("b", 1699999960000), ("c", 1699999970000),
                         ("d", 1699999980000), ("e", 1699999990000), ("1", 1700000000000)]),
        ({}, [("a", 1699999950000), ("b", 1699999960000), ("c", 1699999970000),
              ("d", 1699999980000), ("e", 1699999990000), ("1", 1700000000000)]),
    ])
    def test_rows(self, keep: dict[str, Any], left: list[tuple[str, int]]) -> None:
        model = active()
        seed_old(model)
        assert model.apply(finish(keep_jobs=keep)) == 0
        s = model.store
        assert s.zrange("completed") == left
        kept = {member for member, _ in left}
        for name in "abcde":
            assert s.exists(name) == (name in kept), name
            assert s.exists(f"{name}:logs") == (name in kept), name
            assert s.get(f"{name}:lock") == "stale"  # never deleted

    def test_ties_go_smallest_member_first(self) -> None:
        model = active()
        for member in ("x", "m", "b9"):
            model.store.zadd("completed", T - 5000, member)
        model.apply(finish(keep_jobs={"count": 2}))
        assert model.store.zrange("completed") == [("x", 1699999995000), ("1", T)]

    def test_age_0_removes_the_job_itself(self) -> None:
        model = active()
        seed_old(model)
        model.store.rpush("1:logs", "r")
        assert model.apply(finish(keep_jobs={"age": 0})) == 0
        s = model.store
        assert not s.exists("completed") and not s.exists("1") and not s.exists("1:logs")
        assert events(model) == [DONE, ["event", "drained"]]

    def test_count_0_deletes_the_job_keys(self) -> None:
        model = active()
        seed_old(model)
        model.store.rpush("1:logs", "r")
        model.store.hset("1:processed", "bull:q:5", '"x"')
        model.store.hset("1:failed", "bull:q:6", "boom")
        assert model.apply(finish(keep_jobs={"count": 0})) == 0
        s = model.store
        assert [k for k in s.keys if k.startswith("1")] == []
        assert s.zcard("completed") == 5  # not added; nothing trimmed
        assert events(model)[0] == DONE

    def test_default_limit_1000_newest_first(self) -> None:
        model = active()
        for i in range(1002):
            model.store.zadd("completed", T - 100000 - i, f"x{i}")
        model.apply(finish(keep_jobs={"age": 30}))
        assert model.store.zrange("completed") == [
            ("x1001", 1699999898999), ("x1000", 1699999899000), ("1", T)]

    def test_fractional_cutoff_is_exact(self) -> None:
        model = active()
        model.store.zadd("completed", T - 20, "at")       # == T - 20: removed (inclusive)
        model.store.zadd("completed", T - 19, "after")    # kept
        model.apply(finish(keep_jobs={"age": 0.02}))
        assert model.store.zrange("completed") == [("after", 1699999999981), ("1", T)]

    def test_half_millisecond_cutoff(self) -> None:
        model = active()
        model.store.zadd("completed", T - 1, "one")
        model.store.zadd("completed", T - 2, "two")
        model.store.zadd("completed", Fraction(2 * T - 3, 2), "x")  # T - 1.5
        model.apply(finish(keep_jobs={"age": 0.0015}))  # cutoff T - 1.5
        assert model.store.zrange("completed") == [("one", T - 1), ("1", T)]

    def test_failure_trims_failed_only(self) -> None:
        model = active()
        seed_old(model, "failed")
        model.store.zadd("completed", T - 60000, "c")
        model.apply(finish(target="failed", value="x", attempts=1, keep_jobs={"count": 1}))
        assert model.store.zrange("failed") == [("1", T)]
        assert model.store.zrange("completed") == [("c", 1699999940000)]

    def test_logs_of_kept_job_untouched(self) -> None:
        model = active()
        for row in ("r1", "r2", "r3"):
            model.store.rpush("1:logs", row)
        model.apply(finish(keep_jobs={"count": 5}))
        assert model.store.lrange("1:logs") == ["r1", "r2", "r3"]


class TestMetrics:
    def seeded(self, prev_ts: int, count: str, prev_count: str,
               data: list[str] | None = None) -> QueueModel:
        model = active()
        model.store.hset("metrics:completed", "count", count)
        model.store.hset("metrics:completed", "prevTS", str(prev_ts))
        model.store.hset("metrics:completed", "prevCount", prev_count)
        for point in data or []:
            model.store.rpush("metrics:completed:data", point)
        return model

    def test_first(self) -> None:
        model = active()
        model.apply(finish(max_metrics_size=100))
        assert model.store.hgetall("metrics:completed") == {
            "count": "1", "prevTS": "1700000000000", "prevCount": "0"}
        assert not model.store.exists("metrics:completed:data")

    def test_same_minute(self) -> None:
        model = self.seeded(T - 20000, "4", "2", ["2"])  # T - 20000 starts T's minute
        model.apply(finish(max_metrics_size=100))
        assert model.store.hgetall("metrics:completed") == {
            "count": "5", "prevTS": "1699999980000", "prevCount": "2"}
        assert model.store.lrange("metrics:completed:data") == ["2"]

    def test_next_minute_by_one_ms(self) -> None:
        model = self.seeded(T - 20001, "7", "4", ["2"])  # the minute before, by 1 ms
        model.apply(finish(max_metrics_size=100))
        assert model.store.hgetall("metrics:completed") == {
            "count": "8", "prevTS": "1700000000000", "prevCount": "7"}
        assert model.store.lrange("metrics:completed:data") == ["3", "2"]  # 7 - 4

    def test_gap_and_cap(self) -> None:
        gap = self.seeded(T - 180000, "7", "4", ["2"])
        gap.apply(finish(max_metrics_size=100))
        assert gap.store.lrange("metrics:completed:data") == ["0", "0", "3", "2"]
        capped = self.seeded(T - 600000, "7", "4", ["5", "6", "7"])
        capped.apply(finish(max_metrics_size=3))
        assert capped.store.lrange("metrics:completed:data") == ["0", "0", "3"]

    def test_failed_target_and_off(self) -> None:
        model = active()
        model.apply(finish(target="failed", value="x", attempts=1, max_metrics_size=10))
        assert model.store.hgetall("metrics:failed") == {
            "count": "1", "prevTS": "1700000000000", "prevCount": "0"}
        off = active()
        off.apply(finish())
        assert [k for k in off.store.keys if k.startswith("metrics")] == []
