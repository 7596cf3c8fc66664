"""finish-metrics: the per-minute metrics moveToFinished-14 keeps with maxMetricsSize.

`metrics:<target>` holds `count`, `prevTS` and `prevCount`; `metrics:<target>:data` holds one
delta per minute, newest at index 0. Minutes are `floor(ts / 60000)`. NOW (T + 60 s) lies 20 s
into its minute.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, job_hash, wait_list
from reference_impl.cases.finish import NOW, active_job, complete, fail

NOTES = {
    "metrics-first": Flag(
        "missing-write",
        "The first finish ever writes count 1, prevTS = now and prevCount 0, and pushes no "
        "data point.",
    ),
    "metrics-minute": Flag(
        "boundary",
        "count always goes up by 1; only when floor(now/60000) passed floor(prevTS/60000) is "
        "a point pushed: delta = count before this job - prevCount (the job itself counts in "
        "the next point), then prevCount = count before this job and prevTS = now.",
    ),
    "metrics-gap": Flag(
        "boundary",
        "N >= 2 minutes later, LPUSH delta then N-1 zeros (the zeros end up in front), N "
        "capped at maxMetricsSize, then LTRIM 0 max-1.",
    ),
    "metrics-target": Flag(
        "key-layout",
        "A failure counts in metrics:failed; without maxMetricsSize nothing is counted.",
    ),
}

#: Node's MetricsTime.ONE_WEEK: one point per minute for a week.
ONE_WEEK = 10080


def _seeded(prev_ts: int, count: int, prev_count: int, data: list[str] | None = None,
            target: str = "completed") -> dict[str, Any]:
    given = active_job(**{f"metrics:{target}": job_hash(
        {"count": str(count), "prevTS": str(prev_ts), "prevCount": str(prev_count)})})
    if data:
        given[f"metrics:{target}:data"] = wait_list(*data)
    return given


def _cases() -> list[Case]:
    on = complete(max_metrics_size=ONE_WEEK)
    return [
        Case("metrics-first", "The first completion writes count 1, prevTS now, prevCount 0.",
             (on,), ("metrics-first",), given=active_job()),
        Case("metrics-same-minute",
             "Within prevTS's minute only count goes up (4 -> 5).", (on,), ("metrics-minute",),
             given=_seeded(NOW - 10000, 4, 2, ["2"])),
        Case("metrics-next-minute",
             "25 s after prevTS but in the next minute, delta 7 - 4 = 3 is pushed; prevCount "
             "becomes 7, count 8.", (on,), ("metrics-minute",),
             given=_seeded(NOW - 25000, 7, 4, ["2"])),
        Case("metrics-gap-zeros",
             "Three minutes later the list gets delta 3 below two zeros: [0, 0, 3, 2].",
             (on,), ("metrics-gap",), given=_seeded(NOW - 180000, 7, 4, ["2"])),
        Case("metrics-capped",
             "Ten minutes later with maxMetricsSize 3, N is capped at 3 and the list trimmed "
             "to [0, 0, 3].", (complete(max_metrics_size=3),), ("metrics-gap",),
             given=_seeded(NOW - 600000, 7, 4, ["5", "6", "7"])),
        Case("metrics-failed", "A failure counts in metrics:failed; metrics:completed stays.",
             (fail(max_metrics_size=ONE_WEEK),), ("metrics-target",),
             given=_seeded(NOW - 10000, 4, 2)),
        Case("metrics-off", "Without maxMetricsSize the seeded metrics stay as they were.",
             (complete(),), ("metrics-target",), given=_seeded(NOW - 90000, 4, 2, ["2"])),
    ]


AREA = Area(
    "finish-metrics",
    "moveToFinished-14 metrics: count, prevTS, prevCount and the per-minute data list "
    "(first point, same minute, next minute, gaps with zeros, the cap and trim, the target).",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "With maxMetricsSize m, each finish INCRs the `count` of `metrics:<target>`. The "
        "first finish ever writes `count 1`, `prevTS = now`, `prevCount 0` and no point. "
        "When `floor(now / 60000)` has passed `floor(prevTS / 60000)`, it LPUSHes `delta = "
        "count before this job - prevCount` to `metrics:<target>:data`, then N - 1 zeros "
        "for N minutes passed (N capped at m), and trims the list to m points. Without "
        "maxMetricsSize nothing is counted."
    ),
)
