"""QueueModel recovery: the client's backoff, retryJob-11, and the stall check
moveStalledJobsToWait-9 (RESEARCH-WORKER.md §0.1, §2, §4).

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model or the score functions. T = 1700000000000 as in the worked examples.
"""

from __future__ import annotations

from typing import Any

import pytest
from model_helpers import T, events, got

from reference_impl.form import form_to_store
from reference_impl.model import QueueModel
from reference_impl.ops import MoveToActive
from reference_impl.recovery import backoff_delay
from reference_impl.store import Str
from reference_impl.worker_ops import MoveStalledJobsToWait, RetryJob

JOB = {"hash": {"name": "a", "priority": "0", "ats": "1", "processedOn": str(T)}}
LOCK = {"string": {"value": "tok", "pttl": 30000}}
DEFA = "job stalled more than allowable limit"


def seeded(**keys: Any) -> QueueModel:
    """A model over the given state (vector form, keys by suffix)."""
    return QueueModel(form_to_store(keys))


def active_job(**more: Any) -> QueueModel:
    """Job 1 active under lock tok and marked stalled, plus `more` keys."""
    keys = {"active": {"list": ["1"]}, "1": JOB, "1:lock": LOCK, "stalled": {"set": ["1"]}}
    return seeded(**{**keys, **more})


def due_job_2() -> dict[str, Any]:
    """Job 2 in delayed, due at T: (T)*4096 = 6963200000000000."""
    return {"delayed": {"zset": {"2": 6963200000000000}},
            "2": {"hash": {"name": "d", "priority": "0", "delay": "1000"}}}


# --- backoff ------------------------------------------------------------------------------


class TestBackoff:
    def test_a_number_is_fixed(self) -> None:
        assert backoff_delay(5000, 1) == 5000
        assert backoff_delay(5000, 4) == 5000

    def test_fixed(self) -> None:
        assert backoff_delay({"type": "fixed", "delay": 2000}, 3) == 2000

    @pytest.mark.parametrize(("attempt", "delay"), [(1, 1000), (2, 2000), (3, 4000),
                                                    (4, 8000)])
    def test_exponential_doubles(self, attempt: int, delay: int) -> None:
        assert backoff_delay({"type": "exponential", "delay": 1000}, attempt) == delay

    def test_exponential_rounds_halves_up_like_math_round(self) -> None:
        # 2^-1 * 5 = 2.5: Math.round gives 3 (Python's round would give 2)
        assert backoff_delay({"type": "exponential", "delay": 5}, 0) == 3
        # 2^1 * 0.75 = 1.5 -> 2
        assert backoff_delay({"type": "exponential", "delay": 0.75}, 2) == 2

    def test_no_delay_is_zero(self) -> None:
        assert backoff_delay({"type": "exponential"}, 3) == 0
        assert backoff_delay(0, 1) == 0

    def test_custom_strategy_is_not_protocol(self) -> None:
        with pytest.raises(ValueError, match="custom"):
            backoff_delay({"type": "jittery", "delay": 10}, 1)


# --- retryJob -----------------------------------------------------------------------------


class TestRetryJob:
    def test_lpush_behind_waiting_and_bookkeeping(self) -> None:
        model = active_job(wait={"list": ["2"]}, **{"2": JOB})
        assert model.apply(RetryJob("1", T + 100)) == 0
        s = model.store
        assert s.lrange("wait") == ["1", "2"]  # 2 pops first
        assert not s.exists("active") and not s.exists("1:lock") and not s.exists("stalled")
        assert s.hgetall("1") == {"name": "a", "priority": "0", "ats": "1",
                                  "processedOn": "1700000000000", "atm": "1"}
        assert s.zrange("marker") == [("0", 0)]
        assert s.hget("meta", "opts.maxLenEvents") == "10000"
        assert events(model) == [["event", "waiting", "jobId", "1", "prev", "active"]]

    def test_lifo_rpushes_and_runs_next(self) -> None:
        model = active_job(wait={"list": ["2"]}, **{"2": JOB})
        assert model.apply(RetryJob("1", T + 100, lifo=True)) == 0
        assert model.store.lrange("wait") == ["2", "1"]
        assert model.apply(MoveToActive(T + 100)) == got("1")
        assert model.store.hget("1", "ats") == "2"

    def test_fields_written(self) -> None:
        model = active_job()
        fields = {"failedReason": "boom", "stacktrace": '["e"]'}
        assert model.apply(RetryJob("1", T + 100, fields=fields)) == 0
        assert model.store.hget("1", "failedReason") == "boom"
        assert model.store.hget("1", "stacktrace") == '["e"]'

    def test_missing_job_still_sweeps(self) -> None:
        model = seeded(active={"list": ["1"]}, **due_job_2())
        assert model.apply(RetryJob("1", T + 100)) == -1
        s = model.store
        assert s.lrange("wait") == ["2"]
        assert not s.exists("delayed")
        assert s.hget("2", "delay") == "0"
        assert s.zrange("marker") == [("0", 0)]
        assert s.hget("meta", "opts.maxLenEvents") is None  # the cap comes after the checks
        assert events(model) == [["event", "waiting", "jobId", "2", "prev", "delayed"]]

    def test_swept_job_runs_before_the_retried_one(self) -> None:
        model = active_job(**due_job_2())
        assert model.apply(RetryJob("1", T + 100)) == 0
        assert model.store.lrange("wait") == ["1", "2"]
        assert events(model) == [["event", "waiting", "jobId", "2", "prev", "delayed"],
                                 ["event", "waiting", "jobId", "1", "prev", "active"]]

    def test_mismatch_writes_nothing(self) -> None:
        model = active_job()
        assert model.apply(RetryJob("1", T + 100, token="w2",
                                    fields={"failedReason": "boom"})) == -6
        s = model.store
        assert s.hget("1", "failedReason") is None
        assert s.get("1:lock") == "tok"
        assert s.smembers("stalled") == ["1"]
        assert s.lrange("active") == ["1"]
        assert not s.exists("events") and not s.exists("meta")

    def test_no_lock_is_minus_2_even_when_not_active(self) -> None:
        assert seeded(active={"list": ["1"]}, **{"1": JOB}).apply(RetryJob("1", T)) == -2
        assert seeded(wait={"list": ["1"]}, **{"1": JOB}).apply(RetryJob("1", T)) == -2

    def test_not_active_after_the_lock_was_deleted(self) -> None:
        model = seeded(wait={"list": ["1"]}, stalled={"set": ["1"]}, **{"1": JOB, "1:lock": LOCK})
        assert model.apply(RetryJob("1", T, fields={"failedReason": "boom"})) == -3
        s = model.store
        assert not s.exists("1:lock") and not s.exists("stalled")
        assert s.hget("1", "failedReason") == "boom"
        assert s.hget("1", "atm") is None
        assert s.lrange("wait") == ["1"]
        assert not s.exists("events")

    def test_token_0_leaves_lock_and_stalled(self) -> None:
        model = active_job()
        assert model.apply(RetryJob("1", T, token="0")) == 0
        assert model.store.keys["1:lock"] == Str("tok", 30000)
        assert model.store.smembers("stalled") == ["1"]
        assert model.store.lrange("wait") == ["1"]

    def test_rightmost_copy_leaves_active(self) -> None:
        model = active_job(active={"list": ["1", "2", "1"]})
        assert model.apply(RetryJob("1", T)) == 0
        assert model.store.lrange("active") == ["1", "2"]

    def test_priority_takes_a_fresh_counter(self) -> None:
        model = active_job(pc={"string": "5"}, **{
            "1": {"hash": {"name": "a", "priority": "3"}},
            "prioritized": {"zset": {"2": 12884901893}}})  # 3*2^32 + 5
        assert model.apply(RetryJob("1", T)) == 0
        s = model.store
        assert s.zrange("prioritized") == [("2", 12884901893), ("1", 12884901894)]
        assert s.get("pc") == "6"
        assert not s.exists("wait")
        assert s.zrange("marker") == [("0", 0)]

    def test_paused_no_marker(self) -> None:
        model = active_job(meta={"hash": {"paused": "1"}}, **due_job_2())
        assert model.apply(RetryJob("1", T + 100)) == 0
        assert model.store.lrange("wait") == ["1", "2"]
        assert not model.store.exists("marker")

    def test_concurrency_counted_after_the_job_left(self) -> None:
        alone = active_job(meta={"hash": {"concurrency": "1"}})
        assert alone.apply(RetryJob("1", T)) == 0
        assert alone.store.zrange("marker") == [("0", 0)]
        crowded = active_job(meta={"hash": {"concurrency": "1"}}, active={"list": ["2", "1"]})
        assert crowded.apply(RetryJob("1", T)) == 0
        assert not crowded.store.exists("marker")

    def test_sweep_counts_the_job_as_active(self) -> None:
        model = active_job(meta={"hash": {"concurrency": "1"}}, **due_job_2())
        assert model.apply(RetryJob("1", T + 100, token="w2")) == -6
        assert model.store.lrange("wait") == ["2"]
        assert not model.store.exists("marker")


# --- moveStalledJobsToWait ----------------------------------------------------------------


def worked_example_after_pass_1() -> QueueModel:
    """§4: active [3, 2, 1] marked by pass 1, then the locks of 1 and 2 expired."""
    return seeded(active={"list": ["3", "2", "1"]}, wait={"list": ["4"]},
                  stalled={"set": ["1", "2", "3"]},
                  **{i: JOB for i in "1234"}, **{"3:lock": LOCK})


class TestStallCheck:
    def test_pass_1_marks_and_throttles(self) -> None:
        model = seeded(active={"list": ["3", "2", "1"]},
                       **{i: JOB for i in "123"}, **{f"{i}:lock": LOCK for i in "123"})
        assert model.apply(MoveStalledJobsToWait(T + 100)) == []
        s = model.store
        assert s.smembers("stalled") == ["1", "2", "3"]
        assert s.keys["stalled-check"] == Str("1700000000100", 30000)
        assert s.hget("meta", "opts.maxLenEvents") == "10000"
        # a second call while stalled-check lives: nothing at all
        s.delete("1:lock")
        assert model.apply(MoveStalledJobsToWait(T + 200)) == []
        assert s.lrange("active") == ["3", "2", "1"]
        assert s.keys["stalled-check"] == Str("1700000000100", 30000)

    def test_pass_2_recovers_to_the_front(self) -> None:
        model = worked_example_after_pass_1()
        assert model.apply(MoveStalledJobsToWait(T + 30100)) == ["1", "2"]
        s = model.store
        assert s.lrange("wait") == ["4", "1", "2"]
        assert s.lrange("active") == ["3"]
        assert s.smembers("stalled") == ["3"]
        assert s.zrange("marker") == [("0", 0)]
        assert s.hgetall("1") == {"name": "a", "priority": "0", "ats": "1",
                                  "processedOn": "1700000000000", "stc": "1"}
        assert events(model) == [
            ["event", "waiting", "jobId", "1", "prev", "active"],
            ["event", "stalled", "jobId", "1"],
            ["event", "waiting", "jobId", "2", "prev", "active"],
            ["event", "stalled", "jobId", "2"],
        ]
        assert model.apply(MoveToActive(T + 30200)) == got("2")

    def test_again_defers_the_failure(self) -> None:
        model = seeded(active={"list": ["1"]}, stalled={"set": ["1"]},
                       **{"1": {"hash": {"name": "a", "stc": "1", "ats": "2"}}})
        assert model.apply(MoveStalledJobsToWait(T)) == ["1"]
        s = model.store
        assert s.hget("1", "stc") == "2"
        assert s.hget("1", "defa") == DEFA
        assert s.lrange("wait") == ["1"]
        assert not s.exists("failed")

    def test_max_stalled_0_and_the_boundary(self) -> None:
        first = seeded(active={"list": ["1"]}, stalled={"set": ["1"]}, **{"1": JOB})
        assert first.apply(MoveStalledJobsToWait(T, max_stalled_count=0)) == ["1"]
        assert first.store.hget("1", "defa") == DEFA
        equal = seeded(active={"list": ["1"]}, stalled={"set": ["1"]},
                       **{"1": {"hash": {"stc": "1"}}})
        assert equal.apply(MoveStalledJobsToWait(T, max_stalled_count=2)) == ["1"]
        assert equal.store.hgetall("1") == {"stc": "2"}  # 2 > 2 is false

    @pytest.mark.parametrize(("scheduler", "defa"), [
        ({"repeat:s1": {"hash": {"every": "1000"}}}, None),
        ({"repeat": {"zset": {"s1": 1700000060000}}}, None),
        ({}, DEFA),
    ])
    def test_live_scheduler_jobs_never_get_defa(self, scheduler: dict[str, Any],
                                                defa: str | None) -> None:
        model = seeded(active={"list": ["1"]}, stalled={"set": ["1"]},
                       **{"1": {"hash": {"stc": "1", "rjk": "s1"}}}, **scheduler)
        assert model.apply(MoveStalledJobsToWait(T)) == ["1"]
        assert model.store.hget("1", "defa") == defa

    def test_locked_and_finished_suspects_are_skipped(self) -> None:
        model = seeded(active={"list": ["2"]}, stalled={"set": ["1", "2"]},
                       **{"1": JOB, "2": JOB, "2:lock": LOCK})
        assert model.apply(MoveStalledJobsToWait(T)) == []
        s = model.store
        assert s.hget("1", "stc") is None and s.hget("2", "stc") is None
        assert s.smembers("stalled") == ["2"]
        assert not s.exists("wait") and not s.exists("events")

    def test_hashless_id_is_recovered(self) -> None:
        model = seeded(active={"list": ["1"]}, stalled={"set": ["1"]})
        assert model.apply(MoveStalledJobsToWait(T)) == ["1"]
        assert model.store.hgetall("1") == {"stc": "1"}
        assert model.store.lrange("wait") == ["1"]

    def test_priority_job_goes_to_wait(self) -> None:
        model = seeded(active={"list": ["1"]}, stalled={"set": ["1"]},
                       **{"1": {"hash": {"priority": "5"}}})
        assert model.apply(MoveStalledJobsToWait(T)) == ["1"]
        assert model.store.lrange("wait") == ["1"]
        assert not model.store.exists("prioritized") and not model.store.exists("pc")

    def test_leftmost_copy_leaves_active(self) -> None:
        model = seeded(active={"list": ["1", "2", "1"]}, stalled={"set": ["1"]},
                       **{"1": JOB, "2": JOB, "2:lock": LOCK})
        assert model.apply(MoveStalledJobsToWait(T)) == ["1"]
        assert model.store.lrange("active") == ["2", "1"]
        assert model.store.smembers("stalled") == ["1", "2"]

    def test_marker_paused_and_maxed_per_job(self) -> None:
        paused = seeded(active={"list": ["1"]}, stalled={"set": ["1"]},
                        meta={"hash": {"paused": "1"}})
        assert paused.apply(MoveStalledJobsToWait(T)) == ["1"]
        assert not paused.store.exists("marker")
        # concurrency 2, active [3, 2, 1]: after LREM 1 two are active (maxed), after LREM 2 one
        per_job = seeded(active={"list": ["3", "2", "1"]}, stalled={"set": ["1", "2"]},
                         meta={"hash": {"concurrency": "2"}}, **{"3:lock": LOCK})
        assert per_job.apply(MoveStalledJobsToWait(T)) == ["1", "2"]
        assert per_job.store.zrange("marker") == [("0", 0)]
        maxed = seeded(active={"list": ["2", "1"]}, stalled={"set": ["1"]},
                       meta={"hash": {"concurrency": "1"}}, **{"2:lock": LOCK})
        assert maxed.apply(MoveStalledJobsToWait(T)) == ["1"]
        assert not maxed.store.exists("marker")

    def test_legacy_marker_id_only_leaves_active(self) -> None:
        model = seeded(active={"list": ["0:1699999990000"]}, stalled={"set": ["0:1699999990000"]})
        assert model.apply(MoveStalledJobsToWait(T)) == []
        s = model.store
        assert not s.exists("active") and not s.exists("stalled")
        assert not s.exists("0:1699999990000") and not s.exists("wait")

    def test_interval_is_the_check_keys_expiry(self) -> None:
        model = QueueModel()
        assert model.apply(MoveStalledJobsToWait(T, stalled_interval=5000)) == []
        assert model.store.keys["stalled-check"] == Str("1700000000000", 5000)
        assert sorted(model.store.keys) == ["meta", "stalled-check"]
