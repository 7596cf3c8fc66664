"""A worker's side of a job scheduler (`reference_impl.worker_iteration`), against calls
worked out by hand from npm bullmq 6.7.0's Worker.nextJobFromJobData and
JobScheduler.upsertJobScheduler (override false) and getNextJobOpts."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl.scheduler_ops import NextMillis, PickUpIteration, UpdateJobScheduler
from reference_impl.worker_iteration import cron_lookup, next_call

#: 123 ms past a whole second: the every iteration's fire time.
FIRE = 1_700_000_000_123
#: A whole minute, 2023-11-14T22:13:00Z: the pattern iteration's fire time.
MINUTE = 1_699_999_980_000


def _every(count: int | None = 1, **extra: Any) -> dict[str, Any]:
    repeat: dict[str, Any] = {"every": 1000, **extra}
    if count is not None:
        repeat["count"] = count
    return {"repeat": repeat, "repeatJobKey": "s", "jobId": f"repeat:s:{FIRE}", "delay": 0,
            "timestamp": FIRE - 1000}


def _pick(opts: dict[str, Any], now: int = FIRE + 5, rjk: str | None = "s",
          producer: str = f"repeat:s:{FIRE}") -> PickUpIteration:
    return PickUpIteration(producer, now, rjk, opts)


def test_an_every_iteration_asks_for_the_next_with_count_plus_one() -> None:
    call = next_call(_pick(_every() | {"priority": 5, "attempts": 3}))
    # The script computes an every scheduler's fire time: the client sends none (0 here).
    # The picked-up job's other opts carry over; timestamp is now.
    assert call == UpdateJobScheduler("s", FIRE + 5, 0, f"repeat:s:{FIRE}", {
        "repeat": {"every": 1000, "count": 2}, "repeatJobKey": "s", "jobId": "repeat:s:0",
        "delay": 0, "timestamp": FIRE + 5, "priority": 5, "attempts": 3})


@pytest.mark.parametrize(("opts", "rjk", "asked"), [
    # count 2, limit 3: the third iteration; count 3, limit 3: a fourth would pass the limit.
    (_every(2, limit=3), "s", True),
    (_every(3, limit=3), "s", False),
    # No count: this is the first, so the next is number 1 and limit 1 still allows it.
    (_every(None, limit=1), "s", True),
    # endDate: at it, still; 1 ms before now, no more.
    (_every(endDate=FIRE + 5), "s", True),
    (_every(endDate=FIRE + 4), "s", False),
    # The scheduler: rjk, or else opts.repeatJobKey; neither is no iteration.
    (_every(), None, True),
    ({k: v for k, v in _every().items() if k != "repeatJobKey"}, None, False),
    # Both or neither of every and pattern: the client throws before any call.
    ({"repeat": {"every": 1000, "pattern": "* * * * *"}, "repeatJobKey": "s"}, "s", False),
    ({"repeat": {"count": 1}, "repeatJobKey": "s"}, "s", False),
])
def test_when_the_client_asks_at_all(opts: dict[str, Any], rjk: str | None,
                                     asked: bool) -> None:
    assert (next_call(_pick(opts, rjk=rjk)) is not None) is asked


def test_the_opts_scheduler_names_the_call_without_rjk() -> None:
    call = next_call(_pick(_every() | {"repeatJobKey": "other"}, rjk=None))
    assert call is not None and call.scheduler_id == "other"
    assert call.job_opts["repeatJobKey"] == "other"


def test_every_keeps_a_nonzero_offset_and_drops_immediately() -> None:
    call = next_call(_pick(_every(offset=123, immediately=True, startDate=FIRE - 9000)))
    assert call is not None
    assert call.job_opts["repeat"] == {"every": 1000, "offset": 123, "count": 2,
                                       "startDate": FIRE - 9000}
    zero = next_call(_pick(_every(offset=0)))
    assert zero is not None and "offset" not in zero.job_opts["repeat"]


def test_a_pattern_asks_the_cron_library_after_the_later_of_now_and_prev_millis() -> None:
    opts = {"repeat": {"pattern": "0 * * * * *", "count": 1, "tz": "Europe/Paris",
                       "endDate": MINUTE + 600_000, "offset": 7},
            "prevMillis": MINUTE, "repeatJobKey": "p"}
    early = _pick(opts, MINUTE - 500, "p", f"repeat:p:{MINUTE}")
    late = _pick(opts, MINUTE + 150_000, "p", f"repeat:p:{MINUTE}")
    assert cron_lookup(early) == NextMillis("0 * * * * *", MINUTE, "Europe/Paris", None,
                                            MINUTE + 600_000)
    assert cron_lookup(late) == NextMillis("0 * * * * *", MINUTE + 150_000, "Europe/Paris",
                                           None, MINUTE + 600_000)
    assert cron_lookup(_pick(_every())) is None  # every: the script's fire time


def test_a_pattern_call_carries_the_fire_time_as_prev_millis() -> None:
    # The pinned client's answer after 22:13:00.000: 22:14:00.000 (cron_answers.json).
    opts = {"repeat": {"pattern": "0 * * * * *", "count": 1, "offset": 7},
            "prevMillis": MINUTE, "repeatJobKey": "p", "jobId": f"repeat:p:{MINUTE}"}
    call = next_call(_pick(opts, MINUTE + 5, "p", f"repeat:p:{MINUTE}"))
    assert call == UpdateJobScheduler("p", MINUTE + 5, MINUTE + 60_000, f"repeat:p:{MINUTE}", {
        # A pattern's offset is not kept (only every's is).
        "repeat": {"pattern": "0 * * * * *", "count": 2}, "prevMillis": MINUTE + 60_000,
        "repeatJobKey": "p", "jobId": f"repeat:p:{MINUTE + 60_000}", "delay": 59_995,
        "timestamp": MINUTE + 5})


def test_a_pattern_without_a_fire_time_before_its_end_date_asks_nothing() -> None:
    opts = {"repeat": {"pattern": "0 * * * * *", "count": 1, "endDate": MINUTE + 59_999},
            "prevMillis": MINUTE, "repeatJobKey": "p"}
    assert next_call(_pick(opts, MINUTE + 5, "p", f"repeat:p:{MINUTE}")) is None
