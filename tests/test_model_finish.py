"""QueueModel moveToFinished-14 (PROTOCOL-WORKER.md §0.1-§0.5, §1, §6.2): the finished writes,
the error codes and their order, retention, metrics, fetch-next and the dedup release.

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model's helpers. T = 1700000000000, which lies 20 s into its minute (T // 60000 =
28333333, remainder 20000).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from model_helpers import T, events, got, none_ready

from reference_impl.model import QueueModel
from reference_impl.ops import Add, MoveToActive
from reference_impl.worker_ops import MoveToFinished, Pttl

DONE = ["event", "completed", "jobId", "1", "returnvalue", '"ok"', "prev", "active"]


def active(job_id: str = "1") -> QueueModel:
    """Job `job_id` active with lock tok (PX 30000) and in stalled, as a fetch leaves it."""
    model = QueueModel()
    s = model.store
    s.lpush("active", job_id)
    for name, value in {"name": "a", "timestamp": str(T), "delay": "0", "priority": "0",
                        "processedOn": str(T), "ats": "1"}.items():
        s.hset(job_id, name, value)
    s.set(f"{job_id}:lock", "tok", pttl=30000)
    s.sadd("stalled", job_id)
    return model


def finish(now: int = T, **kwargs: Any) -> MoveToFinished:
    kwargs.setdefault("value", '"ok"')
    kwargs.setdefault("keep_jobs", {"count": -1})
    return MoveToFinished("1", now, **kwargs)


def seed_old(model: QueueModel, target: str = "completed") -> None:
    """Jobs a..e finished at T-50000 .. T-10000, each with a hash, :logs and a stale lock."""
    for i, name in enumerate("abcde"):
        model.store.zadd(target, T - 50000 + 10000 * i, name)
        model.store.hset(name, "name", "old")
        model.store.rpush(f"{name}:logs", "row")
        model.store.set(f"{name}:lock", "stale")


class TestFinishedWrites:
    def test_complete(self) -> None:
        model = active()
        assert model.apply(finish(T + 60000)) == 0
        s = model.store
        assert s.zrange("completed") == [("1", 1700000060000)]
        assert s.hget("1", "returnvalue") == '"ok"'
        assert s.hget("1", "finishedOn") == "1700000060000"
        assert s.hget("1", "atm") == "1"
        assert s.hget("1", "processedOn") == "1700000000000"  # untouched
        assert s.hget("1", "ats") == "1"
        assert not s.exists("1:lock") and not s.exists("stalled") and not s.exists("active")
        assert s.hget("meta", "opts.maxLenEvents") == "10000"
        assert events(model) == [
            ["event", "completed", "jobId", "1", "returnvalue", '"ok"', "prev", "active"],
            ["event", "drained"]]

    def test_fail_with_attempts_left(self) -> None:
        model = active()
        fields = {"failedReason": "boom", "stacktrace": '["e"]'}
        assert model.apply(finish(target="failed", value="boom", attempts=2,
                                  fields=fields)) == 0
        s = model.store
        assert s.zrange("failed") == [("1", T)]
        assert s.hget("1", "failedReason") == "boom"
        assert s.hget("1", "stacktrace") == '["e"]'
        assert s.hget("1", "atm") == "1"
        assert events(model) == [
            ["event", "failed", "jobId", "1", "failedReason", "boom", "prev", "active"],
            ["event", "drained"]]

    @pytest.mark.parametrize(("atm_before", "attempts", "exhausted"),
                             [(None, 0, "1"), (None, 1, "1"), (None, 2, None), ("2", 3, "3")])
    def test_retries_exhausted(self, atm_before: str | None, attempts: int,
                               exhausted: str | None) -> None:
        model = active()
        if atm_before is not None:
            model.store.hset("1", "atm", atm_before)
        model.apply(finish(target="failed", value="boom", attempts=attempts))
        tail = [e for e in events(model) if e[1] == "retries-exhausted"]
        want = [] if exhausted is None else [
            ["event", "retries-exhausted", "jobId", "1", "attemptsMade", exhausted]]
        assert tail == want

    def test_defa_dropped_on_failure_only(self) -> None:
        failing, completing = active(), active()
        for model in (failing, completing):
            model.store.hset("1", "defa", "job stalled more than allowable limit")
        failing.apply(finish(target="failed", value="x", attempts=0))
        completing.apply(finish())
        assert failing.store.hget("1", "defa") is None
        assert completing.store.hget("1", "defa") == "job stalled more than allowable limit"

    def test_attempts_required_for_failures(self) -> None:
        with pytest.raises(ValueError):
            active().apply(finish(target="failed", value="x"))

    def test_right_most_copy_leaves_active(self) -> None:
        model = active()
        model.store.rpush("active", "2")
        model.store.rpush("active", "1")  # active [1, 2, 1]
        model.apply(finish())
        assert model.store.lrange("active") == ["1", "2"]
        assert events(model) == [DONE]  # active not empty: no drained


class TestCodes:
    def test_missing_job(self) -> None:
        model = QueueModel()
        model.store.lpush("active", "1")
        assert model.apply(finish()) == -1
        assert not model.store.exists("meta")

    def test_children_checked_before_the_lock(self) -> None:
        model = active()
        model.store.sadd("1:dependencies", "bull:q:7")
        assert model.apply(finish(token="other")) == -4
        assert model.store.get("1:lock") == "tok"
        model.store.delete("1:dependencies")
        model.store.zadd("1:unsuccessful", T, "bull:q:8")
        assert model.apply(finish(token="other")) == -9
        assert model.apply(finish(token="other", target="failed", value="x",
                                  attempts=1)) == -6  # children do not block a failure

    def test_lock_codes(self) -> None:
        model = active()
        assert model.apply(finish(token="other")) == -6
        assert model.store.get("1:lock") == "tok"
        assert model.store.smembers("stalled") == ["1"]
        model.store.delete("1:lock")
        assert model.apply(finish()) == -2

    def test_not_active_after_lock_and_fields(self) -> None:
        model = active()
        model.store.delete("active")
        model.store.lpush("wait", "1")
        fields = {"failedReason": "boom", "stacktrace": "[]"}
        assert model.apply(finish(target="failed", value="boom", attempts=1,
                                  fields=fields)) == -3
        s = model.store
        assert not s.exists("1:lock") and not s.exists("stalled")
        assert s.hget("1", "failedReason") == "boom" and s.hget("1", "stacktrace") == "[]"
        assert s.hget("1", "atm") is None
        assert not s.exists("meta") and not s.exists("events")

    def test_token_0_leaves_lock_and_stalled(self) -> None:
        model = active()
        assert model.apply(finish(token="0")) == 0
        assert model.store.get("1:lock") == "tok"
        assert model.store.pttl("1:lock") == 30000
        assert model.store.smembers("stalled") == ["1"]


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


class TestFetchNext:
    def with_waiting(self) -> QueueModel:
        model = active()
        model.store.lpush("wait", "2")
        model.store.hset("2", "name", "b")
        model.store.hset("2", "priority", "0")
        return model

    def test_job(self) -> None:
        model = self.with_waiting()
        assert model.apply(finish(T + 5, fetch_next=True, lock_duration=15000)) == got("2")
        s = model.store
        assert s.lrange("active") == ["2"]
        assert s.get("2:lock") == "tok" and s.pttl("2:lock") == 15000
        assert s.hget("2", "processedOn") == "1700000000005" and s.hget("2", "ats") == "1"
        assert s.zrange("marker") == [("0", 0)]
        assert events(model)[1:] == [["event", "active", "jobId", "2", "prev", "waiting"]]

    def test_promotes_due_job(self) -> None:
        model = active()
        model.store.zadd("delayed", 6963199995904000, "d")  # (T-1000)*4096
        model.store.hset("d", "delay", "4000")
        assert model.apply(finish(fetch_next=True)) == got("d")
        assert model.store.hget("d", "delay") == "0"
        assert model.store.pttl("d:lock") == 30000  # no lockDuration given: the default
        assert [e[1] for e in events(model)] == ["completed", "waiting", "active"]

    def test_rate_limited(self) -> None:
        model = self.with_waiting()
        model.store.hset("meta", "max", "1")
        model.store.set("limiter", "1", pttl=5000)
        assert model.apply(finish(fetch_next=True)) == {"job": None, "ttl": Pttl(5000),
                                                         "next": 0}
        assert model.store.lrange("wait") == ["2"]
        assert [e[1] for e in events(model)] == ["completed"]

    def test_limiter_window_started(self) -> None:
        model = self.with_waiting()
        model.apply(finish(fetch_next=True, limiter={"max": 5, "duration": 1000}))
        assert model.store.get("limiter") == "1" and model.store.pttl("limiter") == 1000

    def test_paused(self) -> None:
        model = active()
        model.store.hset("meta", "paused", "1")
        model.store.zadd("delayed", 6963199995904000, "d")
        assert model.apply(finish(fetch_next=True)) == none_ready()
        assert model.store.lrange("wait") == ["d"]
        assert not model.store.exists("marker")
        assert [e[1] for e in events(model)] == ["completed", "waiting"]  # no drained

    def test_concurrency_counted_after_leaving_active(self) -> None:
        model = self.with_waiting()
        model.store.hset("meta", "concurrency", "1")
        assert model.apply(finish(fetch_next=True)) == got("2")

    def test_next_delayed(self) -> None:
        model = active()
        model.store.zadd("delayed", 6963200020480003, "d")  # (T+5000)*4096 + 3
        assert model.apply(finish(fetch_next=True)) == none_ready(1700000005000)
        assert [e[1] for e in events(model)] == ["completed"]

    def test_nothing_then_drained_check(self) -> None:
        model = active()
        model.store.set("pc", "3")
        assert model.apply(finish(fetch_next=True)) == 0
        assert not model.store.exists("pc")
        assert events(model) == [DONE, ["event", "drained"]]
        busy = active()
        busy.store.rpush("active", "2")
        assert busy.apply(finish(fetch_next=True)) == 0
        assert events(busy) == [DONE]

    def test_no_fetch_drained_ignores_delayed(self) -> None:
        model = active()
        model.store.zadd("delayed", 6963200020480003, "d")
        assert model.apply(finish()) == 0
        assert events(model) == [DONE, ["event", "drained"]]
        blocked = active()
        blocked.store.zadd("prioritized", 8589934593, "p")
        blocked.apply(finish())
        assert events(blocked) == [DONE]


class TestDedupRelease:
    @pytest.mark.parametrize(("value", "pttl", "kept"), [
        ("1", None, False), ("1", 50000, True), ("9", None, True)])
    def test_rows(self, value: str, pttl: int | None, kept: bool) -> None:
        model = active()
        model.store.hset("1", "deid", "d1")
        model.store.set("de:d1", value, pttl=pttl)
        model.apply(finish())
        assert model.store.exists("de:d1") == kept

    def test_released_on_failure(self) -> None:
        model = active()
        model.store.hset("1", "deid", "d1")
        model.store.set("de:d1", "1")
        model.apply(finish(target="failed", value="x", attempts=1))
        assert not model.store.exists("de:d1")

    def test_trimmed_job_keeps_its_key(self) -> None:
        model = active()
        model.store.zadd("completed", T - 10, "a")
        model.store.hset("a", "deid", "da")
        model.store.set("de:da", "a")
        model.apply(finish(keep_jobs={"count": 1}))
        assert not model.store.exists("a")
        assert model.store.get("de:da") == "a"

    def test_add_then_finish(self) -> None:
        """§6.2 worked example: de:d1 (no TTL) released, de:d2 (TTL) kept."""
        model = QueueModel()
        model.apply(Add("a", T, opts={"de": {"id": "d1"}}))
        model.apply(Add("b", T, opts={"de": {"id": "d2", "ttl": 5000}}))
        model.apply(MoveToActive(T, "tok"))
        model.apply(MoveToActive(T, "tok"))
        model.apply(MoveToFinished("1", T + 10, keep_jobs={"count": -1}))
        model.apply(MoveToFinished("2", T + 10, keep_jobs={"count": -1}))
        assert not model.store.exists("de:d1")
        assert model.store.get("de:d2") == "2" and model.store.pttl("de:d2") == 5000


class TestOutOfScope:
    def test_parent_and_requeue_raise(self) -> None:
        child = active()
        child.store.hset("1", "parentKey", "bull:q:9")
        with pytest.raises(NotImplementedError):
            child.apply(finish())
        requeue = active()
        requeue.store.hset("1", "deid", "d1")
        requeue.store.hset("dn:d1", "name", "next")
        with pytest.raises(NotImplementedError):
            requeue.apply(finish())

    def test_keep_jobs_required(self) -> None:
        with pytest.raises(ValueError):
            active().apply(MoveToFinished("1", T))
