"""stalled: the stall check, moveStalledJobsToWait-9 (RESEARCH-WORKER.md §4).

One pass per stalledInterval (the `stalled-check` key throttles every worker). A pass takes the
suspects the previous pass left in `stalled`; each one still active and without a lock goes
back to the front of wait (RPUSH) with `stc` counted, `defa` set past maxStalledCount (unless
it belongs to a live job scheduler), a marker unless paused or maxed, and the events `waiting`
and `stalled`. Then every active job becomes a suspect for the next pass.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, fetch, job_hash, stalled, wait_list, zset
from reference_impl.worker_ops import MoveStalledJobsToWait

NOTES = {
    "throttle": Flag(
        "lock-stall",
        "While `stalled-check` exists a pass returns [] and changes nothing; otherwise it "
        "first SETs stalled-check to now with PX stalledInterval.",
    ),
    "two-pass": Flag(
        "lock-stall",
        "Only the suspects of the previous pass (the `stalled` SET) can be recovered; the pass "
        "DELs that set and ends by SADDing every id in active, so a lockless job is found "
        "stalled one to two intervals after it lost its lock.",
    ),
    "locked": Flag(
        "lock-stall",
        "A suspect whose lock key exists is skipped: a live worker still holds it.",
    ),
    "finished": Flag(
        "lock-stall",
        "A suspect that LREM active 1 does not find (it finished meanwhile) is skipped: no "
        "stc, no event, not pushed.",
    ),
    "front": Flag(
        "placement",
        "A recovered job is RPUSHed to wait's right end, where fetches pop, so it runs next; "
        "it goes to wait even with a priority. It leaves active by LREM active 1 (the leftmost "
        "copy).",
    ),
    "events": Flag(
        "event",
        "Each recovered job emits `waiting jobId <id> prev active`, then `stalled jobId <id>`, "
        "without MAXLEN: the pass XTRIMs the stream first, writing meta's opts.maxLenEvents "
        "default when missing.",
    ),
    "counts": Flag(
        "lock-stall",
        "Each recovery does HINCRBY stc 1 (never reset); stc > maxStalledCount sets defa "
        "\"job stalled more than allowable limit\" and the job still goes to wait: the failure "
        "is deferred to the worker that fetches it, the script never writes failed.",
    ),
    "scheduler": Flag(
        "lock-stall",
        "A job whose rjk names a live job scheduler (the repeat:<rjk> key exists, or rjk has a "
        "score in the repeat zset) never gets defa.",
    ),
    "marker": Flag(
        "wake-marker",
        "Each recovered job writes marker \"0\" unless the queue is paused or at "
        "meta.concurrency, counted after that job's own LREM.",
    ),
    "missing-hash": Flag(
        "precondition",
        "An active suspect without a job hash is recovered anyway: HINCRBY creates a hash "
        "holding only stc=1.",
    ),
    "legacy-marker": Flag(
        "older-protocol",
        "A suspect id starting with \"0:\" (a BullMQ < 5 marker) is only removed from active "
        "(LREM active 1): no hash, no event, not pushed.",
    ),
}

#: Pass 1 of the worked example runs at P1, pass 2 once stalled-check has expired.
P1 = T + 100
P2 = P1 + 30000
LOCK = {"string": {"value": "tok", "pttl": 30000}}


def _job(**extra: str) -> dict[str, Any]:
    """A job hash as its first fetch at T left it."""
    return job_hash({"name": "a", "timestamp": str(T), "delay": "0", "priority": "0",
                     "processedOn": str(T), "ats": "1", **extra})


def _suspects(*active: str, locked: tuple[str, ...] = (), marked: tuple[str, ...] | None = None,
              more: dict[str, Any] | None = None) -> dict[str, Any]:
    """Jobs in active (left to right), the `locked` ones under lock tok, and the ids the
    previous pass marked (default: all of active); `more` adds or replaces keys."""
    given: dict[str, Any] = {"active": wait_list(*active)}
    for job_id in active:
        given[job_id] = _job()
    for job_id in locked:
        given[f"{job_id}:lock"] = LOCK
    suspects = active if marked is None else marked
    if suspects:
        given["stalled"] = stalled(*suspects)
    given.update(more or {})
    return given


def _check(now: int = P2, **options: int) -> MoveStalledJobsToWait:
    return MoveStalledJobsToWait(now, **options)


def _cases() -> list[Case]:
    paused = job_hash({"paused": "1"})
    return [
        # --- the worked example ----------------------------------------------------------
        Case("worked-example-pass-1", "A first pass over three locked active jobs returns "
             "[], marks them and sets stalled-check PX 30000.", (_check(P1),),
             ("two-pass", "throttle"),
             given={"active": wait_list("3", "2", "1"), "wait": wait_list("4"),
                    **{i: _job() for i in "1234"}, **{f"{i}:lock": LOCK for i in "123"}}),
        Case("worked-example-pass-2", "Pass 2 moves lockless suspects 1, 2 to the front of "
             "wait [4, 1, 2]; locked 3 stays active, marked.",
             (_check(),), ("two-pass", "front", "events", "locked", "marker"),
             given=_suspects("3", "2", "1", locked=("3",),
                             more={"wait": wait_list("4"), "4": _job()})),
        Case("check-key-throttles", "While stalled-check lives a pass returns [], recovers "
             "no lockless suspect and marks no job.", (_check(),),
             ("throttle",),
             given=_suspects("2", "1", marked=("1",), more={"stalled-check": {
                 "string": {"value": str(P1), "pttl": 30000}}})),
        Case("interval-sets-expiry", "With nothing active a pass still writes stalled-check "
             "now PX stalledInterval (5000) and returns [].",
             (_check(stalled_interval=5000),), ("throttle",)),
        # --- which suspects are recovered ------------------------------------------------
        Case("unmarked-lockless-only-marked", "A lockless active job that the previous pass "
             "did not mark is only marked, not recovered.", (_check(),), ("two-pass",),
             given=_suspects("1", marked=())),
        Case("locked-suspect-skipped", "A suspect with a lock stays active and is marked "
             "again.", (_check(),), ("locked", "two-pass"), given=_suspects("1", locked=("1",))),
        Case("finished-suspect-skipped", "A suspect no longer in active is skipped: no stc, no "
             "event, and stalled is emptied.", (_check(),), ("finished",),
             given={"stalled": stalled("1"), "completed": zset([("1", T + 50)]),
                    "1": _job(finishedOn=str(T + 50), atm="1")}),
        Case("missing-hash-recovered", "An active suspect without a hash is pushed to wait and "
             "gets a hash holding only stc=1.", (_check(),), ("missing-hash", "events"),
             given={"active": wait_list("1"), "stalled": stalled("1")}),
        Case("legacy-marker-dropped", "A suspect \"0:\" marker id is removed from active with "
             "no hash, event or push.", (_check(),), ("legacy-marker",),
             given={"active": wait_list("0:1699999990000", "2"), "2": _job(), "2:lock": LOCK,
                    "stalled": stalled("0:1699999990000")}),
        # --- where it goes ---------------------------------------------------------------
        Case("front-of-wait", "A recovered job is RPUSHed past the waiting job, so the next "
             "fetch takes it (ats 2).", (_check(), fetch(P2)), ("front",),
             given=_suspects("1", more={"wait": wait_list("4"), "4": _job()})),
        Case("priority-job-to-wait", "A recovered priority-5 job goes to wait, not "
             "prioritized, and takes no pc.", (_check(),), ("front",),
             given=_suspects("1", more={"1": _job(priority="5")})),
        Case("lrem-from-left", "With active [1, 2, 1] the recovery removes the leftmost 1.",
             (_check(),), ("front", "two-pass"),
             given=_suspects("1", "2", "1", locked=("2",), marked=("1",))),
        # --- stc and defa ----------------------------------------------------------------
        Case("defa-past-limit", "A second stall with maxStalledCount 1 makes stc 2 and sets "
             "defa, and the job still goes to wait.", (_check(),), ("counts",),
             given=_suspects("1", more={"1": _job(stc="1", ats="2")})),
        Case("max-stalled-0", "With maxStalledCount 0 the first stall sets defa.",
             (_check(max_stalled_count=0),), ("counts",), given=_suspects("1")),
        Case("count-equal-to-max", "With maxStalledCount 2 a second stall (stc 2) sets no "
             "defa.", (_check(max_stalled_count=2),), ("counts",),
             given=_suspects("1", more={"1": _job(stc="1", ats="2")})),
        Case("scheduler-key-no-defa", "A job whose scheduler hash repeat:s1 exists gets no "
             "defa past the limit.", (_check(),), ("scheduler",),
             given=_suspects("1", more={"1": _job(stc="1", rjk="s1"),
                                     "repeat:s1": job_hash({"every": "60000"})})),
        Case("scheduler-zscore-no-defa", "A job whose rjk has a score in the repeat zset gets "
             "no defa past the limit.", (_check(),), ("scheduler",),
             given=_suspects("1", more={"1": _job(stc="1", rjk="s1"),
                                     "repeat": zset([("s1", T + 60000)])})),
        Case("scheduler-gone-defa", "A job whose rjk names no live scheduler gets defa past "
             "the limit.", (_check(),), ("scheduler", "counts"),
             given=_suspects("1", more={"1": _job(stc="1", rjk="s1")})),
        # --- markers ---------------------------------------------------------------------
        Case("paused-no-marker", "While paused a recovered job goes to wait with no marker.",
             (_check(),), ("marker",), given=_suspects("1", more={"meta": paused})),
        Case("maxed-after-lrem-no-marker", "At concurrency 1 with another job still active the "
             "recovered job writes no marker.", (_check(),), ("marker",),
             given=_suspects("2", "1", locked=("2",), marked=("1",),
                             more={"meta": job_hash({"concurrency": "1"})})),
        Case("maxed-counted-per-job", "At concurrency 2 with three active, the second "
             "recovery frees a slot and writes marker 0.", (_check(),), ("marker",),
             given=_suspects("3", "2", "1", locked=("3",), marked=("1", "2"),
                             more={"meta": job_hash({"concurrency": "2"})})),
    ]


AREA = Area(
    "stalled",
    "The stall check moveStalledJobsToWait-9: the stalled-check throttle, the two-pass "
    "detection, recovery to the front of wait, stc and the deferred failure (defa), scheduler "
    "jobs, markers and events.",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "moveStalledJobsToWait runs at most once per stalledInterval (`SET stalled-check "
        "now PX interval`). It recovers the suspects of the previous pass (the `stalled` "
        "set) that have no lock and are still in active: RPUSH to the front of wait, "
        "`HINCRBY stc 1`, `waiting` and `stalled` events; past maxStalledCount it sets "
        "`defa` (never for a live scheduler's job). It then adds every id in active to "
        "`stalled` for the next pass."
    ),
)
