"""QueueModel moveToFinished-14 (RESEARCH-WORKER.md §0.1-§0.5, §1, §6.2): the finished writes,
the error codes and their order, fetch-next and the dedup release (retention and metrics are
in test_model_finish_retention.py).

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model's helpers. T = 1700000000000.
"""

from __future__ import annotations

import pytest
from model_helpers import DONE, T, active, events, finish, got, none_ready

from reference_impl.model import QueueModel
from reference_impl.ops import Add, MoveToActive
from reference_impl.worker_ops import MoveToFinished, Pttl


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
