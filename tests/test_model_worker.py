"""QueueModel, the worker half's small ops: locks, the rate limiter, deduplication keys, removal
and job updates (docs/RESEARCH.md, the worker sections).

Expected states are literals computed by hand from the protocol; nothing is derived by calling
the model's helpers. T = 1700000000000 as in the worked example.
"""

from __future__ import annotations

from model_helpers import T, events

from reference_impl.form import form_to_store
from reference_impl.model import QueueModel
from reference_impl.ops import Add, MoveToActive
from reference_impl.store import JsonText, Str
from reference_impl.worker_ops import (
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    Pttl,
    ReleaseLock,
    RemoveDeduplicationKey,
    RemoveJob,
    UpdateData,
    UpdateProgress,
    result_form,
    result_matches,
)


def held(*job_ids: str, **extra: object) -> QueueModel:
    """Active jobs holding lock "tok" (PX 30000), all in stalled."""
    given: dict[str, object] = {"active": {"list": list(job_ids)},
                                "stalled": {"set": sorted(job_ids)}}
    for job_id in job_ids:
        given[job_id] = {"hash": {"name": "a", "priority": "0"}}
        given[f"{job_id}:lock"] = {"string": {"value": "tok", "pttl": 30000}}
    given.update(extra)
    return QueueModel(form_to_store(given))


def lock(model: QueueModel, job_id: str) -> Str | None:
    value = model.store.keys.get(f"{job_id}:lock")
    assert value is None or isinstance(value, Str)
    return value


class TestLocks:
    def test_extend_renews_and_unsuspects(self) -> None:
        model = held("1", "2")
        assert model.apply(ExtendLock("1", "tok", 60000)) == 1
        assert lock(model, "1") == Str("tok", 60000)
        assert model.store.smembers("stalled") == ["2"]

    def test_extend_with_another_token_changes_nothing(self) -> None:
        model = held("1")
        assert model.apply(ExtendLock("1", "zz", 60000)) == 0
        assert lock(model, "1") == Str("tok", 30000)
        assert model.store.smembers("stalled") == ["1"]

    def test_extend_never_recreates(self) -> None:
        model = held("1")
        model.store.delete("1:lock")
        assert model.apply(ExtendLock("1", "tok", 60000)) == 0
        assert lock(model, "1") is None

    def test_extend_locks_reports_failures_in_order(self) -> None:
        model = held("1", "2", "3")
        model.store.delete("3:lock")
        assert model.apply(ExtendLocks(("3", "1", "4", "2"), ("tok", "tok", "tok"), 5000)) == [
            "3", "4", "2"]
        assert lock(model, "1") == Str("tok", 5000)
        assert lock(model, "2") == Str("tok", 30000)  # no token for it: a mismatch
        assert model.store.smembers("stalled") == ["2", "3"]

    def test_release_leaves_stalled(self) -> None:
        model = held("1")
        assert model.apply(ReleaseLock("1", "zz")) == 0
        assert model.apply(ReleaseLock("1", "tok")) == 1
        assert lock(model, "1") is None
        assert model.store.smembers("stalled") == ["1"]


class TestRateLimit:
    def test_window_starts_on_first_counted_fetch(self) -> None:
        model = QueueModel()
        model.apply(Add("a", T))
        model.apply(Add("b", T))
        limited = MoveToActive(T, limiter={"max": 1, "duration": 1000})
        assert model.apply(limited) == {"job": "1", "ttl": 0, "next": 0}
        assert model.store.keys["limiter"] == Str("1", 1000)
        assert model.apply(limited) == {"job": None, "ttl": Pttl(1000), "next": 0}
        assert model.store.lrange("wait") == ["2"]

    def test_meta_max_and_worker_duration(self) -> None:
        model = QueueModel(form_to_store({
            "meta": {"hash": {"max": "1", "duration": "3000"}},
            "wait": {"list": ["2", "1"]}, "1": {"hash": {"name": "a"}},
            "2": {"hash": {"name": "b"}}}))
        assert model.apply(MoveToActive(T, limiter={"max": 5, "duration": 7000}))["job"] == "1"
        assert model.store.keys["limiter"] == Str("1", 7000)
        assert model.apply(MoveToActive(T))["ttl"] == Pttl(7000)

    def test_counter_without_expiry_never_limits(self) -> None:
        model = QueueModel(form_to_store({"limiter": {"string": "10"},
                                          "wait": {"list": ["1"]}, "1": {"hash": {"n": "a"}}}))
        assert model.apply(MoveToActive(T, limiter={"max": 2, "duration": 1000}))["job"] == "1"
        assert model.store.keys["limiter"] == Str("11", None)

    def test_push_back_to_the_front(self) -> None:
        model = held("1", wait={"list": ["2"]}, **{"2": {"hash": {"name": "b"}}},
                     limiter={"string": {"value": "9", "pttl": 5000}})
        assert model.apply(MoveJobFromActiveToWait("1")) == Pttl(5000)
        assert model.store.lrange("wait") == ["2", "1"]
        assert model.store.zrange("marker") == [("0", 0)]
        assert lock(model, "1") is None
        assert not model.store.exists("stalled")
        assert events(model) == [["event", "waiting", "jobId", "1", "prev", "active"]]

    def test_push_back_prioritized_takes_the_tier_front(self) -> None:
        model = held("1", pc={"string": "7"})
        model.store.hset("1", "priority", "3")
        assert model.apply(MoveJobFromActiveToWait("1")) == 0
        assert model.store.zrange("prioritized") == [("1", 3 * 4294967296)]
        assert model.store.get("pc") == "7"
        assert not model.store.exists("marker")

    def test_rate_limit_ttl_rows(self) -> None:
        counted = {"limiter": {"string": {"value": "3", "pttl": 4000}}}
        assert QueueModel(form_to_store(counted)).apply(GetRateLimitTtl(5)) == 0
        assert QueueModel(form_to_store(counted)).apply(GetRateLimitTtl(3)) == Pttl(4000)
        assert QueueModel(form_to_store(counted)).apply(GetRateLimitTtl(0)) == Pttl(4000)
        bare = {"limiter": {"string": "3"}}
        assert QueueModel(form_to_store(bare)).apply(GetRateLimitTtl(0)) == -1
        assert QueueModel(form_to_store(bare)).apply(GetRateLimitTtl(2)) == 0
        assert QueueModel().apply(GetRateLimitTtl(0)) == -2

    def test_pttl_results_match_any_positive_value_up_to_the_bound(self) -> None:
        want = result_form({"job": None, "ttl": Pttl(1000), "next": 0})
        assert want == {"job": None, "ttl": {"pttl": 1000}, "next": 0}
        assert result_matches(want, {"job": None, "ttl": 993, "next": 0})
        assert not result_matches(want, {"job": None, "ttl": 1001, "next": 0})
        assert not result_matches(want, {"job": None, "ttl": 0, "next": 0})
        assert not result_matches({"pttl": 5}, True)


class TestDeduplication:
    def test_owner_then_hit(self) -> None:
        model = QueueModel()
        assert model.apply(Add("a", T, {}, {"de": {"id": "d1", "ttl": 5000}})) == "1"
        assert model.store.keys["de:d1"] == Str("1", 5000)
        assert model.store.hget("1", "deid") == "d1"
        assert model.apply(Add("b", T, {}, {"de": {"id": "d1"}})) == "1"
        assert model.store.get("id") == "2"
        assert not model.store.exists("2")
        assert events(model)[-1] == ["event", "deduplicated", "jobId", "1", "deduplicationId",
                                     "d1", "deduplicatedJobId", "2"]

    def test_stale_key_is_taken_over(self) -> None:
        model = QueueModel(form_to_store({"id": {"string": "9"}, "de:d1": {"string": "9"}}))
        assert model.apply(Add("b", T, {}, {"de": {"id": "d1"}})) == "10"
        assert model.store.keys["de:d1"] == Str("10", None)

    def test_replace_removes_a_delayed_owner(self) -> None:
        model = QueueModel(form_to_store({
            "id": {"string": "1"}, "de:d1": {"string": {"value": "1", "pttl": 5000}},
            "delayed": {"zset": {"1": 6963200012288000}},
            "1": {"hash": {"name": "a", "deid": "d1"}}, "1:logs": {"list": ["x"]}}))
        opts = {"de": {"id": "d1", "ttl": 9000, "replace": True}, "delay": 3000}
        assert model.apply(Add("b", T, {}, opts)) == "2"
        assert model.store.keys["de:d1"] == Str("2", 5000)  # KEEPTTL without extend
        assert not model.store.exists("1") and not model.store.exists("1:logs")
        assert [e[1] for e in events(model)] == ["removed", "deduplicated", "added", "delayed"]

    def test_remove_key_only_for_its_job(self) -> None:
        model = QueueModel(form_to_store({"de:d1": {"string": "1"}}))
        assert model.apply(RemoveDeduplicationKey("d1", "2")) == 0
        assert model.apply(RemoveDeduplicationKey("d1", "1")) == 1
        assert not model.store.exists("de:d1")


class TestRemovalAndUpdates:
    def test_remove_names_the_state_and_drops_the_keys(self) -> None:
        model = QueueModel(form_to_store({
            "prioritized": {"zset": {"1": 8589934593}}, "1": {"hash": {"deid": "d"}},
            "1:logs": {"list": ["l"]}, "1:processed": {"hash": {"k": "v"}},
            "de:d": {"string": {"value": "1", "pttl": 9000}}}))
        # Without its children: `k` names no job of the queue (removing children is
        # test_model_flows.py's).
        assert model.apply(RemoveJob("1", remove_children=False)) == 1
        assert model.store.keys == {"events": model.store.keys["events"],
                                    "meta": model.store.keys["meta"]}
        assert events(model) == [["event", "removed", "jobId", "1", "prev", "prioritized"]]

    def test_remove_guards(self) -> None:
        locked = held("1")
        assert locked.apply(RemoveJob("1")) == 0
        assert locked.store.exists("1")
        scheduled = QueueModel(form_to_store({
            "repeat": {"zset": {"s": 5}}, "repeat:s:5": {"hash": {"rjk": "s"}},
            "repeat:s:4": {"hash": {"rjk": "s"}}}))
        assert scheduled.apply(RemoveJob("repeat:s:5")) == -8
        assert scheduled.apply(RemoveJob("repeat:s:4")) == 1
        assert QueueModel().apply(RemoveJob("7")) == 1
        assert not QueueModel().store.exists("events")

    def test_progress_data_and_logs(self) -> None:
        model = QueueModel(form_to_store({"1": {"hash": {"data": "{}"}},
                                          "1:logs": {"list": ["r1", "r2", "r3", "r4"]}}))
        assert model.apply(UpdateProgress("1", 42)) == 0
        assert model.store.hget("1", "progress") == JsonText(42)
        assert events(model) == [["event", "progress", "jobId", "1", "data", "42"]]
        assert model.store.hget("meta", "opts.maxLenEvents") == "10000"
        assert model.apply(UpdateData("1", {"a": 1})) == 0
        assert model.store.hget("1", "data") == JsonText({"a": 1})
        assert model.apply(AddLog("1", "r5", 3)) == 3
        assert model.store.lrange("1:logs") == ["r3", "r4", "r5"]
        assert model.apply(AddLog("9", "row")) == -1
        assert not model.store.exists("9:logs")
        assert model.apply(UpdateProgress("9", 1)) == -1
        assert model.apply(UpdateData("9", 1)) == -1
