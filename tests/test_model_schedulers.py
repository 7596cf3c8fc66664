"""The job scheduler model (`reference_impl.schedulers`), against values worked out by hand
from the 6.x scripts (addJobScheduler-11, updateJobScheduler-12, removeJobScheduler-3,
getJobScheduler-1 and getJobSchedulerEveryNextMillis)."""

from __future__ import annotations

import pytest

from reference_impl.model import QueueModel
from reference_impl.scheduler_ops import (
    AddJobScheduler,
    GetJobScheduler,
    RemoveJobScheduler,
    UpdateJobScheduler,
)
from reference_impl.schedulers import SCHEDULER_JOB_ID_COLLISION, every_next_millis

#: 123 ms past a whole second.
T = 1_700_000_000_123
EVERY = {"repeat": {"every": 1000}}


@pytest.mark.parametrize(("prev", "now", "offset", "start", "expected"), [
    # First iteration, nothing given: now, and the offset is where now falls in its second.
    (None, T, 0, None, (T, 123)),
    # An offset ahead of now's: that slot of this second.
    (None, T, 400, None, (1_700_000_000_400, 400)),
    # An offset already past in this second: the next second's slot.
    (None, T, 100, None, (1_700_000_001_100, 100)),
    # A start date ahead wins; one already past gives now.
    (None, T, 0, T + 5000, (T + 5000, 123)),
    (None, T, 0, T - 5000, (T, 123)),
    # Later iterations: the previous one plus the interval...
    (T, T + 5, 123, None, (T + 1000, 123)),
    # ... unless that is past: now's slot plus the offset, or the next when that is not ahead.
    (T, T + 5500, 123, None, (1_700_000_006_123, 123)),
    (1_700_000_000_700, 1_700_000_005_500, 700, None, (1_700_000_005_700, 700)),
])
def test_every_next_millis(prev: int | None, now: int, offset: int, start: int | None,
                           expected: tuple[int, int]) -> None:
    assert every_next_millis(prev, 1000, now, offset, start) == expected


def _added(model: QueueModel, start_date: int | None = None, limit: int | None = None,
           data: object = None) -> object:
    """Scheduler `s`, every second, upserted at T."""
    return model.apply(AddJobScheduler("s", T, "report", every=1000, job_opts=EVERY,
                                       start_date=start_date, limit=limit,
                                       data={} if data is None else data))


def test_an_every_scheduler_fires_now_and_its_iteration_waits() -> None:
    model = QueueModel()
    assert _added(model) == {"job": f"repeat:s:{T}", "delay": 0}
    assert model.store.zrange("repeat") == [("s", T)]
    assert model.store.hgetall("repeat:s") == {"name": "report", "every": "1000",
                                               "offset": "123", "ic": "1"}
    assert model.store.lrange("wait") == [f"repeat:s:{T}"]
    assert model.store.hget(f"repeat:s:{T}", "rjk") == "s"
    assert model.store.get("id") == "1"


def test_an_upsert_replaces_the_delayed_iteration_at_the_same_time() -> None:
    model = QueueModel()
    _added(model, start_date=T + 5000)
    again = model.apply(AddJobScheduler("s", T + 10, "renamed", every=1000, job_opts=EVERY))
    # The interval did not change: the replacement keeps the old fire time, 4990 ms ahead.
    assert again == {"job": f"repeat:s:{T + 5000}", "delay": 4990}
    assert model.store.hget(f"repeat:s:{T + 5000}", "name") == "renamed"
    assert [member for member, _ in model.store.zrange("delayed")] == [f"repeat:s:{T + 5000}"]


def test_removing_a_scheduler_leaves_an_iteration_that_already_waits() -> None:
    model = QueueModel()
    _added(model)
    assert model.apply(RemoveJobScheduler("s")) == 0
    assert model.store.zrange("repeat") == [] and not model.store.exists("repeat:s")
    assert model.store.lrange("wait") == [f"repeat:s:{T}"]
    assert model.apply(RemoveJobScheduler("s")) == 1


def test_only_the_current_iteration_produces_the_next() -> None:
    model = QueueModel()
    _added(model)
    assert model.apply(UpdateJobScheduler("s", T + 5, 0, "repeat:s:1", EVERY)) is None
    assert model.store.zrange("repeat") == [("s", T)]
    nxt = model.apply(UpdateJobScheduler("s", T + 5, 0, f"repeat:s:{T}", EVERY))
    assert nxt == f"repeat:s:{T + 1000}"
    assert model.store.hget("repeat:s", "ic") == "2"
    # The same producer again: the next job exists, so only a `duplicated` event.
    assert model.apply(UpdateJobScheduler("s", T + 6, 0, f"repeat:s:{T}", EVERY)) is None
    assert model.store.hget("repeat:s", "ic") == "2"


def test_a_pattern_iteration_id_taken_by_another_job_is_a_collision() -> None:
    model = QueueModel()
    first = AddJobScheduler("p", T, "report", pattern="* * * * *", next_millis=T + 877)
    model.apply(first)
    model.apply(RemoveJobScheduler("p"))  # the delayed iteration goes with it...
    model.store.hset(f"repeat:p:{T + 877}", "name", "someone else's")  # ...another takes its id
    assert model.apply(first) == SCHEDULER_JOB_ID_COLLISION
    assert model.store.zrange("repeat") == []


def test_get_reads_the_hash_and_the_next_fire_time() -> None:
    model = QueueModel()
    _added(model, limit=5, data={"a": 1})
    assert model.apply(GetJobScheduler("s")) == {
        "fields": {"name": "report", "limit": "5", "every": "1000", "offset": "123",
                   "data": '{"a":1}', "ic": "1"},
        "next": T}
    assert model.apply(GetJobScheduler("missing")) is None


def test_an_iteration_is_never_deduplicated() -> None:
    # addJobFromScheduler stores the job as is: opts.de only names the deid it keeps.
    model = QueueModel()
    model.store.set("de:d1", "someone-else")
    op = AddJobScheduler("s", T, "report", every=1000,
                         job_opts={**EVERY, "de": {"id": "d1"}})
    assert model.apply(op) == {"job": f"repeat:s:{T}", "delay": 0}
    assert model.store.hget(f"repeat:s:{T}", "deid") == "d1"
    assert model.store.get("de:d1") == "someone-else"


def test_while_paused_an_upsert_leaves_the_waiting_iteration() -> None:
    # The script looks in the legacy `paused` list, which 6.x never fills.
    model = QueueModel()
    model.store.hset("meta", "paused", "1")
    _added(model)
    again = model.apply(AddJobScheduler("s", T + 1, "report", every=1000, job_opts=EVERY))
    # Nothing was replaced, so the next fire time is the previous one plus every.
    assert again == {"job": f"repeat:s:{T + 1000}", "delay": 999}
    assert model.store.lrange("wait") == [f"repeat:s:{T}"]
