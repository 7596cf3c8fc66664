"""promote-job: promote-9 (Job.promote) moves one delayed job now, whatever its fire time.

promote_range.py already has the basic promote-op-* setups (LPUSH with a waiting job, twice,
waiting/missing ids, priority 4, far future, paused, hashless). These cases add fetch order,
marker and band side effects, other states, and the maxed check.
"""

from __future__ import annotations

from reference_impl.cases import (
    Area,
    Case,
    Flag,
    S,
    T,
    add,
    fetch,
    job_hash,
    string,
    wait_list,
    zset,
)
from reference_impl.ops import ChangeDelay, Promote

NOTES = {
    "lpush-order": Flag(
        "placement",
        "promote LPUSHes: jobs already waiting are fetched first, and successive promotes keep "
        "their call order, not their fire-time order.",
    ),
    "promote-writes": Flag(
        "missing-write",
        "promote emits `waiting ... prev delayed` (no MAXLEN) and sets the hash field delay=0.",
    ),
    "marker": Flag(
        "wake-marker", "promote writes marker \"0\" unless paused or maxed, never marker \"1\"."
    ),
    "stale-wake": Flag(
        "wake-marker",
        "promote does not refresh or remove marker \"1\", even when delayed empties.",
    ),
    "promote-priority": Flag(
        "placement",
        "A promoted job with a priority goes to prioritized with a fresh INCR pc.",
    ),
    "band-intact": Flag(
        "score",
        "Removing one job leaves the other scores of its band unchanged; later adds bump from "
        "the band's current top.",
    ),
    "not-delayed": Flag(
        "precondition", "promote of a job not in delayed returns -3 and changes nothing."
    ),
    "paused": Flag(
        "pause",
        "Paused or maxed (LLEN active >= concurrency) queues still promote but get no marker 0.",
    ),
    "ignores-fire-time": Flag(
        "placement", "promote moves the job regardless of its fire time and runs no sweep."
    ),
}

F = T + 5000


def _delayed_job(priority: int = 0) -> dict[str, object]:
    return job_hash({"name": "d", "delay": "5000", "priority": str(priority),
                     "timestamp": str(T)})


def _cases() -> list[Case]:
    return [
        Case("fetched-after-waiting", "A promoted job is fetched after both jobs already waiting.",
             (add("w1"), add("w2"), add("d", delay=5000), Promote("3"),
              fetch(T), fetch(T), fetch(T)), ("lpush-order",)),
        Case("two-promotes-keep-call-order",
             "Promoting 1 (F+4000) then 2 (F) gives wait [2, 1]; 1 runs first.",
             (add("a", delay=9000), add("b", delay=5000), Promote("1"), Promote("2"), fetch(T)),
             ("lpush-order",)),
        Case("fetch-before-fire-time", "After promote, a fetch at T, before F, returns the job.",
             (add("a", delay=5000), Promote("1"), fetch(T)), ("ignores-fire-time",)),
        Case("no-sweep", "promote moves only its job; an overdue job stays delayed.",
             (add("old", T - 10_000, delay=1000), add("new", delay=5000), Promote("2")),
             ("ignores-fire-time",)),
        Case("after-change-delay",
             "After changeDelay, promote still emits waiting and sets delay 0.",
             (add("a", delay=5000), ChangeDelay("1", 20000, T), Promote("1")),
             ("promote-writes",)),
        Case("marker-0-only", "With no marker, promote writes member 0 only, not member 1.",
             (Promote("d"),), ("marker",),
             given={"delayed": zset([("d", F * S)]), "d": _delayed_job()}),
        Case("stale-wake-delayed-empty", "Promoting the last delayed job keeps marker 1 at F.",
             (Promote("d"),), ("stale-wake", "marker"),
             given={"delayed": zset([("d", F * S)]), "d": _delayed_job(),
                    "marker": zset([("1", F)])}),
        Case("prioritized-behind-tier", "A promoted priority-3 job gets counter 3, after tier 3.",
             (add("x", priority=3), add("y", priority=1), add("d", delay=5000, priority=3),
              Promote("3"), fetch(T), fetch(T), fetch(T)), ("promote-priority",)),
        Case("prioritized-pc-wrap", "Promoting a priority-6 job at pc 2^32-1 scores 6*2^32.",
             (Promote("d"),), ("promote-priority",),
             given={"delayed": zset([("d", F * S)]), "d": _delayed_job(6),
                    "pc": string(str(2**32 - 1))}),
        Case("middle-of-band", "Promoting F*S+1 leaves F*S and F*S+2 in the band.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=5000), Promote("2")),
             ("band-intact",)),
        Case("head-of-band", "After the head is promoted, a same-F add bumps to F*S+2.",
             (add("a", delay=5000), add("b", delay=5000), Promote("1"), add("c", delay=5000)),
             ("band-intact",)),
        Case("top-of-band-freed", "After the band top is promoted, a same-F add reuses F*S+1.",
             (add("a", delay=5000), add("b", delay=5000), Promote("2"), add("c", delay=5000)),
             ("band-intact",)),
        Case("active-minus-3", "promote of an active job returns -3 and changes nothing.",
             (add("a"), fetch(T), Promote("1")), ("not-delayed",)),
        Case("prioritized-minus-3", "promote of a prioritized job returns -3; pc stays 1.",
             (add("a", priority=2), Promote("1")), ("not-delayed",)),
        Case("hash-only-minus-3", "promote of a completed job (hash only) returns -3.",
             (Promote("c"),), ("not-delayed",),
             given={"c": job_hash({"name": "c", "delay": "5000", "finishedOn": str(T)}),
                    "completed": zset([("c", T)])}),
        Case("maxed", "Concurrency 1 reached: the job moves to wait, no marker 0.",
             (Promote("d"),), ("paused",),
             given={"delayed": zset([("d", F * S)]), "d": _delayed_job(),
                    "meta": job_hash({"concurrency": "1"}), "active": wait_list("busy")}),
        Case("below-concurrency", "Concurrency 2 with 1 active is not maxed: marker 0 is written.",
             (Promote("d"),), ("paused", "marker"),
             given={"delayed": zset([("d", F * S)]), "d": _delayed_job(),
                    "meta": job_hash({"concurrency": "2"}), "active": wait_list("busy")}),
        Case("paused-prioritized",
             "Paused: a priority-2 job is prioritized with pc 1 and no marker 0.",
             (add("a", delay=5000, priority=2), Promote("1")), ("paused", "promote-priority"),
             given={"meta": job_hash({"paused": "1"})}),
        Case("legacy-marker-dropped", "promote LPOPs a legacy \"0:\" marker at the left of wait.",
             (Promote("d"),), ("promote-writes",),
             given={"delayed": zset([("d", F * S)]), "d": _delayed_job(),
                    "wait": wait_list(f"0:{F}", "w"), "w": job_hash({"name": "w"})}),
    ]


AREA = Area(
    "promote-job",
    "promote(id): one delayed job moves now, LPUSHed or prioritized, with its marker, band and "
    "error-code side effects.",
    NOTES,
    tuple(_cases()),
    rule=(
        "promote(id) moves one delayed job now, whatever its fire time: LPUSH to wait (or "
        'to prioritized with a fresh `pc`), `delay = 0`, `waiting prev delayed`, marker "0" '
        'unless paused or maxed; marker "1" is left as it was. A job not in delayed gives '
        "-3."
    ),
)
