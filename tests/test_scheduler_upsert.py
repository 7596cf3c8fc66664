"""A caller's upsert of a job scheduler (`reference_impl.scheduler_upsert`): the addJobScheduler
call the client makes, against values worked out by hand from npm bullmq 6.7.0's
Queue.upsertJobScheduler and JobScheduler.upsertJobScheduler / getNextJobOpts. The pattern's
fire time is the pinned client's cron answer (2023-11-14T22:13:20.123Z: the next whole minute
is 22:14:00)."""

from __future__ import annotations

import pytest

from reference_impl.scheduler_ops import AddJobScheduler, UpsertJobScheduler
from reference_impl.scheduler_upsert import upsert_call

T = 1_700_000_000_000
NOW = T + 123


def _call(repeat: dict[str, object], **template: object) -> AddJobScheduler:
    call = upsert_call(UpsertJobScheduler("s", NOW, repeat, **template))  # type: ignore[arg-type]
    assert call is not None
    return call


def test_an_every_upsert_without_a_template() -> None:
    call = _call({"every": 1000})
    # the template name is the scheduler id; the script computes an every fire time
    assert (call.name, call.every, call.next_millis, call.offset) == ("s", 1000, None, None)
    assert (call.data, dict(call.template_opts)) == ({}, {})
    assert call.job_opts == {"repeat": {"every": 1000, "count": 1}, "jobId": "repeat:s:0",
                             "delay": 0, "timestamp": NOW, "repeatJobKey": "s"}


def test_an_every_offset_is_sent_and_carried_but_zero_is_none() -> None:
    call = _call({"every": 1000, "offset": 400})
    assert call.offset == 400
    assert call.job_opts["repeat"] == {"every": 1000, "offset": 400, "count": 1}
    assert _call({"every": 1000, "offset": 0}).offset is None


def test_dates_are_sent_in_ms_and_carried() -> None:
    call = _call({"every": 1000, "startDate": NOW + 5000, "endDate": NOW + 60_000})
    assert (call.start_date, call.end_date) == (NOW + 5000, NOW + 60_000)
    assert call.job_opts["repeat"] == {"every": 1000, "count": 1, "startDate": NOW + 5000,
                                       "endDate": NOW + 60_000}


def test_the_template_opts_go_to_the_hash_and_the_iteration() -> None:
    call = _call({"every": 1000}, name="report", data={"a": 1},
                 opts={"attempts": 3, "repeat": {"every": 5}})
    assert (call.name, call.data) == ("report", {"a": 1})
    assert dict(call.template_opts) == {"attempts": 3, "repeat": {"every": 5}}
    # the iteration's repeat is the upsert's, not the template's
    assert call.job_opts["attempts"] == 3
    assert call.job_opts["repeat"] == {"every": 1000, "count": 1}


def test_a_pattern_fires_at_the_cron_answer() -> None:
    call = _call({"pattern": "0 * * * * *"})
    fire = T + 40_000  # 22:14:00
    assert (call.pattern, call.next_millis, call.offset) == ("0 * * * * *", fire, None)
    assert call.job_opts == {"repeat": {"pattern": "0 * * * * *", "count": 1},
                             "jobId": f"repeat:s:{fire}", "delay": fire - NOW,
                             "timestamp": NOW, "repeatJobKey": "s", "prevMillis": fire}


def test_no_call_for_limit_zero_or_a_pattern_without_a_fire_time() -> None:
    assert upsert_call(UpsertJobScheduler("s", NOW, {"every": 1000, "limit": 0})) is None
    assert _call({"every": 1000, "limit": 1}).limit == 1
    yearly = {"pattern": "0 0 0 1 1 *", "endDate": NOW + 86_400_000}
    assert upsert_call(UpsertJobScheduler("s", NOW, yearly)) is None


@pytest.mark.parametrize("repeat", [
    {"every": 1000, "pattern": "* * * * *"},  # both
    {},  # neither
    {"every": 1000, "endDate": NOW - 1},  # Queue.upsertJobScheduler: end date before now
    {"pattern": "* * * * *", "immediately": True, "startDate": NOW + 1},
])
def test_options_the_client_throws_on_are_refused(repeat: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="the client throws"):
        upsert_call(UpsertJobScheduler("s", NOW, repeat))
