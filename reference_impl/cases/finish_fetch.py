"""finish-fetch: moveToFinished-14's fetch-next and its `drained` check.

With fetchNext the script runs moveToActive's steps after finishing (sweep, rate limit, paused
or maxed, wait before prioritized, lock, `active` event, marker "0") and answers with an array
when it has something to say: a job, a rate limit, a paused or maxed queue, or the next delayed
fire time. Only when it found nothing and delayed is empty, or fetchNext is off, does it check
for `drained` (wait, active and prioritized all empty; delayed jobs do not count) and return 0.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, S, job_hash, wait_list, zset
from reference_impl.cases.finish import NOW, active_job, complete, job_fields
from reference_impl.worker_ops import MoveToFinished

NOTES = {
    "fetch-job": Flag(
        "placement",
        "fetch-next hands out the next job as moveToActive would: RPOPLPUSH wait active, lock "
        "SET PX lockDuration, processedOn = now, ats + 1, `active … prev waiting`, marker "
        "\"0\"; the reply is [hash, id, 0, 0] and no `drained` is emitted.",
    ),
    "fetch-sweep": Flag(
        "placement",
        "fetch-next first promotes due delayed jobs (delay set to 0, `waiting … prev "
        "delayed`, marker \"0\" unless paused), even on a paused queue.",
    ),
    "fetch-limited": Flag(
        "rate-limit",
        "With the limiter at max and a live PTTL the reply is [0, 0, pttl, 0] and nothing is "
        "fetched; a fetched job INCRs the limiter, and the first one starts the window with "
        "PEXPIRE duration.",
    ),
    "fetch-paused": Flag(
        "pause",
        "A paused or maxed queue answers [0, 0, 0, 0]; concurrency is counted after the "
        "finished job left active.",
    ),
    "fetch-next-delayed": Flag(
        "wake-marker",
        "With nothing ready and a delayed job, the reply is [0, 0, 0, trunc(head/4096)] and "
        "no `drained` is emitted.",
    ),
    "drained": Flag(
        "event",
        "When the fetch found nothing and delayed is empty, or fetchNext is off, the script "
        "returns 0 and emits `drained` only if wait, active and prioritized are all empty "
        "(delayed jobs do not prevent it). No `drained` follows an array reply.",
    ),
}

#: A lock duration other than the default, to see that fetch-next uses the one it is given.
LOCK_MS = 15000


def _waiting(name: str = "next", **extra: str) -> dict[str, Any]:
    """A job hash as an add leaves it (never fetched)."""
    fields = {k: v for k, v in job_fields(name).items() if k not in ("processedOn", "ats")}
    fields.update(extra)
    return job_hash(fields)


def _fetching(**kwargs: Any) -> MoveToFinished:
    return complete(fetch_next=True, lock_duration=LOCK_MS, **kwargs)


def _cases() -> list[Case]:
    due = (NOW - 1000) * S
    later = (NOW + 5000) * S + 3
    return [
        Case("fetch-job", "fetch-next takes job 2 from wait, locks it for lockDuration and "
             "returns it; no drained.", (_fetching(),), ("fetch-job", "drained"),
             given=active_job(wait=wait_list("2"), **{"2": _waiting()})),
        Case("fetch-promotes-due",
             "fetch-next promotes a delayed job due at now - 1 s and hands it out.",
             (_fetching(),), ("fetch-sweep", "fetch-job"),
             given=active_job(delayed=zset([("d", due)]),
                              d=_waiting("later", delay="59000"))),
        Case("fetch-rate-limited",
             "With meta max 1 reached and 5 s left on the limiter, the reply's ttl is the PTTL; "
             "2 waits.", (_fetching(),), ("fetch-limited",),
             given=active_job(wait=wait_list("2"), meta=job_hash({"max": "1"}),
                              limiter={"string": {"value": "1", "pttl": 5000}},
                              **{"2": _waiting()})),
        Case("fetch-starts-limiter-window",
             "With a worker limiter {max 5, duration 1000} the fetched job sets limiter 1 PX "
             "1000.", (_fetching(limiter={"max": 5, "duration": 1000}),), ("fetch-limited",),
             given=active_job(wait=wait_list("2"), **{"2": _waiting()})),
        Case("fetch-paused",
             "Paused: fetch-next promotes the due job to wait, no marker, and replies null, 0, "
             "0; no drained.", (_fetching(),),
             ("fetch-paused", "fetch-sweep", "drained"),
             given=active_job(meta=job_hash({"paused": "1"}), delayed=zset([("d", due)]),
                              d=_waiting("later", delay="59000"))),
        Case("fetch-concurrency-after-leaving",
             "With meta concurrency 1 the finishing job has left active, so job 2 is fetched.",
             (_fetching(),), ("fetch-paused", "fetch-job"),
             given=active_job(wait=wait_list("2"), meta=job_hash({"concurrency": "1"}),
                              **{"2": _waiting()})),
        Case("fetch-next-delayed",
             "With only a delayed job at (now+5000)*4096+3 the reply is next = now + 5000 and "
             "no drained.", (_fetching(),), ("fetch-next-delayed", "drained"),
             given=active_job(delayed=zset([("d", later)]),
                              d=_waiting("later", delay="65000"))),
        Case("fetch-nothing-drained",
             "With nothing waiting, active or delayed, fetch-next returns 0 and drained is "
             "emitted.", (_fetching(),), ("drained",), given=active_job()),
        Case("fetch-nothing-other-active",
             "With nothing to fetch but job 2 still active, the script returns 0 without "
             "drained.", (_fetching(),), ("drained",),
             given=active_job(active=wait_list("2", "1"),
                              **{"2": job_hash(job_fields("b")),
                                 "2:lock": {"string": {"value": "tok2", "pttl": 30000}}})),
        Case("no-fetch-drained-despite-delayed",
             "With fetchNext off, drained is emitted although a delayed job exists.",
             (complete(),), ("drained",),
             given=active_job(delayed=zset([("d", later)]),
                              d=_waiting("later", delay="65000"))),
        Case("no-fetch-prioritized-blocks-drained",
             "With fetchNext off, a prioritized job prevents drained.",
             (complete(),), ("drained",),
             given=active_job(prioritized=zset([("p", 2 * 0x100000000 + 1)]),
                              pc={"string": "1"}, p=_waiting("urgent", priority="2"))),
    ]


AREA = Area(
    "finish-fetch",
    "moveToFinished-14 with fetchNext: the job fetched (after the delayed sweep), rate "
    "limited, paused or maxed, the next delayed fire time, and when `drained` is emitted "
    "with and without fetchNext.",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "With fetchNext, after the finish the script promotes due delayed jobs, then "
        "answers as moveToActive does: a job (`RPOPLPUSH wait active`, lock `SET PX "
        "lockDuration`); `[0, 0, pttl, 0]` when rate limited; `[0, 0, 0, 0]` when paused or "
        "maxed; `[0, 0, 0, trunc(head / 4096)]` when only delayed jobs remain. `drained` is "
        "emitted only when nothing was fetched and wait, active and prioritized are empty."
    ),
)
