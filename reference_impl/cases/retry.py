"""retry: a failed job with attempts left goes back to be run again (RESEARCH-WORKER.md §2).

Without a backoff the worker calls retryJob-11: the due delayed jobs are swept first, then the
lock check, the client's fields, LREM from active, and the push back to wait (LPUSH, or RPUSH
with lifo) or prioritized with a fresh counter, with `atm` counted. With a backoff the client
computes the delay (`recovery.backoff_delay`) and calls moveToDelayed-11 with the fields.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import (
    Area,
    Case,
    Flag,
    S,
    T,
    add,
    fetch,
    job_hash,
    stalled,
    string,
    wait_list,
    zset,
)
from reference_impl.ops import MoveToDelayed
from reference_impl.recovery import backoff_delay
from reference_impl.worker_ops import RetryJob

NOTES = {
    "push-end": Flag(
        "placement",
        "retryJob LPUSHes a standard job (ARGV[3] \"LPUSH\"): it lands at the left end, behind "
        "every waiting job; with lifo (\"RPUSH\") it lands at the right end and runs next.",
    ),
    "sweep": Flag(
        "placement",
        "retryJob first promotes the due delayed jobs (moveToActive's sweep), before it even "
        "checks that the job exists; the promoted jobs are LPUSHed ahead of the retried one.",
    ),
    "sweep-marker": Flag(
        "wake-marker",
        "The sweep's marker decision counts the retried job as still active (paused-or-maxed "
        "is computed before the job leaves active).",
    ),
    "marker": Flag(
        "wake-marker",
        "The retried job writes marker \"0\" unless the queue is paused or at meta.concurrency, "
        "counted after the job left active.",
    ),
    "attempts": Flag(
        "missing-write",
        "A retry does HINCRBY atm 1 and leaves ats, processedOn and finishedOn alone; the "
        "next fetch makes ats 2.",
    ),
    "fields": Flag(
        "missing-write",
        "The client's fields (failedReason, stacktrace) are HMSET after the lock check and "
        "before the active check: written with a -3, not with a -2 or -6.",
    ),
    "lock": Flag(
        "lock-stall",
        "A matching token deletes the lock and SREMs the id from stalled; another token's lock "
        "gives -6, no lock -2; token \"0\" skips the check and leaves lock and stalled alone. "
        "The lock is checked before the active list.",
    ),
    "not-active": Flag(
        "placement",
        "The job leaves active by LREM active -1 (the rightmost copy); -3 when it is not there, "
        "after the lock was deleted: nothing rolls back.",
    ),
    "missing-job": Flag(
        "precondition", "A job without a hash gives -1, checked before the lock.",
    ),
    "priority": Flag(
        "placement",
        "A retried job with priority > 0 goes to prioritized with a fresh INCR pc score, "
        "behind its tier, never to wait.",
    ),
    "event": Flag(
        "event",
        "retryJob emits `waiting jobId <id> prev active` with MAXLEN ~ opts.maxLenEvents, "
        "writing the 10000 default to meta when it is missing.",
    ),
    "backoff": Flag(
        "score",
        "With a backoff the client sends moveToDelayed the computed relative delay (fixed n; "
        "exponential round(2^(attempt-1) * delay), attempt = atm + 1) with failedReason and "
        "stacktrace; the job waits in delayed until now + delay, with no failed or "
        "retries-exhausted event.",
    ),
}

#: The moment of the failure: the job was fetched at T.
R = T + 100
FIELDS = {"failedReason": "boom", "stacktrace": '["Error: boom"]'}
LOCK = {"string": {"value": "tok", "pttl": 30000}}


def _job(**extra: str) -> dict[str, Any]:
    """An active job's hash after its first fetch at T."""
    return job_hash({"name": "a", "data": "{}", "timestamp": str(T), "delay": "0",
                     "priority": "0", "processedOn": str(T), "ats": "1", **extra})


def _active(job_id: str = "1", /, **extra: Any) -> dict[str, Any]:
    """A job active under lock tok and marked stalled; `extra` adds or replaces keys."""
    given: dict[str, Any] = {"active": wait_list(job_id), job_id: _job(),
                             f"{job_id}:lock": LOCK, "stalled": stalled(job_id)}
    given.update(extra)
    return given


def _due(job_id: str = "2") -> dict[str, Any]:
    """A delayed job due at T (so due at R too)."""
    return {"delayed": zset([(job_id, T * S)]),
            job_id: job_hash({"name": "d", "delay": "1000", "priority": "0"})}


def _not_active() -> dict[str, Any]:
    """Job 1 in wait, not in active, yet holding lock tok and a stalled entry."""
    return {"wait": wait_list("1"), "1": _job(), "1:lock": LOCK, "stalled": stalled("1")}


def _waiting(job_id: str = "2") -> dict[str, Any]:
    return {"wait": wait_list(job_id), job_id: job_hash({"name": "w", "priority": "0"})}


def _retry_cases() -> list[Case]:
    return [
        Case("event", "A retry emits `waiting jobId 1 prev active` and writes the events cap "
             "default to meta.", (RetryJob("1", R),), ("event",), given=_active()),
        Case("lpush-behind-waiting", "A retried job is LPUSHed behind the waiting job: wait [2] "
             "becomes [1, 2].", (RetryJob("1", R),), ("push-end",),
             given=_active(**_waiting())),
        Case("lifo-rpush", "With lifo the retried job is RPUSHed and is the next one fetched.",
             (RetryJob("1", R, lifo=True), fetch(R)), ("push-end",),
             given=_active(**_waiting())),
        Case("counts-attempt", "A second retry makes atm 2 and leaves ats 2, processedOn and "
             "finishedOn as they were.", (RetryJob("1", R),), ("attempts",),
             given=_active(**{"1": _job(ats="2", atm="1", finishedOn=str(T - 5000))})),
        Case("refetch-counts-start", "A job fetched, retried and fetched again has ats 2 and "
             "atm 1.", (add("a"), fetch(T), RetryJob("1", R), fetch(R)), ("attempts",)),
        Case("releases-lock-and-stalled", "A matching token deletes the lock and takes only "
             "the retried id out of stalled.", (RetryJob("1", R),), ("lock",),
             given=_active(stalled=stalled("1", "2"), **{"2": _job()})),
        Case("writes-fields", "The failedReason and stacktrace the client sends are written "
             "to the job hash.", (RetryJob("1", R, fields=FIELDS),), ("fields",),
             given=_active()),
        Case("lock-mismatch", "Another token's lock gives -6 before the fields are written; "
             "nothing changes.", (RetryJob("1", R, token="w2", fields=FIELDS),),
             ("lock", "fields"), given=_active()),
        Case("lock-missing", "An active job without a lock gives -2 and stays active.",
             (RetryJob("1", R),), ("lock",),
             given={"active": wait_list("1"), "1": _job()}),
        Case("token-0-keeps-lock", "Token 0 retries the job but leaves its lock and its "
             "stalled membership.", (RetryJob("1", R, token="0"),), ("lock",),
             given=_active()),
        Case("lock-before-active", "A waiting job without a lock gives -2, not -3.",
             (RetryJob("1", R),), ("lock", "not-active"),
             given={"wait": wait_list("1"), "1": _job()}),
        Case("not-active-after-lock-deleted", "Not in active: -3, but the lock and stalled entry "
             "are already gone and the fields written.",
             (RetryJob("1", R, fields=FIELDS),), ("not-active", "fields", "lock"),
             given=_not_active()),
        Case("lrem-from-right", "With active [1, 2, 1] the retry removes the rightmost 1.",
             (RetryJob("1", R),), ("not-active",),
             given=_active(active=wait_list("1", "2", "1"), **{"2": _job()})),
        Case("missing-job-still-sweeps", "A retry of a missing job returns -1, but the due "
             "delayed job was already promoted.", (RetryJob("1", R),),
             ("sweep", "missing-job"), given={"active": wait_list("1"), **_due()}),
        Case("behind-promoted", "The due delayed job is promoted first, so the retried job is "
             "LPUSHed behind it: wait [1, 2].", (RetryJob("1", R),), ("sweep", "push-end"),
             given=_active(**_due())),
        Case("priority-fresh-counter", "A priority-3 retry gets 3*2^32 + the next pc (6), "
             "behind its tier peer.", (RetryJob("1", R),), ("priority",),
             given=_active(**{"1": _job(priority="3"), "pc": string("5"),
                              "prioritized": zset([("2", 3 * 2**32 + 5)]),
                              "2": job_hash({"name": "p", "priority": "3"})})),
        Case("paused-no-marker", "While paused the due job and the retried job go to wait "
             "with no marker.", (RetryJob("1", R),), ("marker", "sweep"),
             given=_active(meta=job_hash({"paused": "1"}), **_due())),
        Case("sole-active-writes-marker", "At concurrency 1 the retried job, once out of "
             "active, frees the slot: marker 0 is written.", (RetryJob("1", R),), ("marker",),
             given=_active(meta=job_hash({"concurrency": "1"}))),
        Case("other-active-no-marker", "At concurrency 1 with another job still active the "
             "retry writes no marker.", (RetryJob("1", R),), ("marker",),
             given=_active(meta=job_hash({"concurrency": "1"}), active=wait_list("2", "1"),
                           **{"2": _job(), "2:lock": LOCK})),
        Case("sweep-counts-job-active", "At concurrency 1 the sweep counts the job as "
             "active: a -6 retry promotes the due job, no marker.",
             (RetryJob("1", R, token="w2"),), ("sweep-marker", "sweep"),
             given=_active(meta=job_hash({"concurrency": "1"}), **_due())),
    ]


def _backoff_cases() -> list[Case]:
    fixed = {"type": "fixed", "delay": 2000}
    exponential = {"type": "exponential", "delay": 1000}
    return [
        Case("backoff-worked-example", "Fixed 2000 ms backoff at T+10: score (T+2010)*4096, "
             "atm 1, delay 2000, fields, one delayed event.",
             (MoveToDelayed("1", T + 10, backoff_delay(fixed, 1), fields={
                 "failedReason": "boom", "stacktrace": '["e"]'}),),
             ("backoff", "fields"),
             given=_active(marker=zset([("0", 0)]))),
        Case("backoff-exponential-third", "The third failure with exponential 1000 sends "
             "delay 4000: F = now + 4000, atm 3.",
             (MoveToDelayed("1", R, backoff_delay(exponential, 3), fields=FIELDS),),
             ("backoff",), given=_active(**{"1": _job(ats="3", atm="2")})),
        Case("backoff-not-active-writes-fields", "A backoff move of a job not in active gives "
             "-3 with the lock deleted and the fields already written.",
             (MoveToDelayed("1", R, backoff_delay(fixed, 1), fields=FIELDS),),
             ("fields", "not-active"),
             given=_not_active()),
        Case("backoff-lock-mismatch-no-fields", "A backoff move under another token's lock "
             "gives -6 and writes no fields.",
             (MoveToDelayed("1", R, backoff_delay(fixed, 1), token="w2", fields=FIELDS),),
             ("fields", "lock"), given=_active()),
    ]


AREA = Area(
    "retry",
    "Retrying a failed job: retryJob-11 (sweep, lock check, fields, the push back to wait or "
    "prioritized, atm, marker, event) and the backoff path through moveToDelayed-11.",
    NOTES,
    tuple((*_retry_cases(), *_backoff_cases())),
    since=versions.WORKER_SINCE,
    example="lpush-behind-waiting",
    rule=(
        "retryJob(id, token, now) first promotes due delayed jobs, then checks the job (-1) "
        "and the lock (-2, -6), writes the client's fields, takes the job out of active "
        "(-3) and re-queues it: LPUSH to wait (RPUSH with lifo) or, with priority > 0, to "
        'prioritized with a fresh `pc`; `HINCRBY atm 1`, `waiting prev active`, marker "0" '
        "unless paused or maxed. A retry with backoff goes through moveToDelayed with the "
        "delay the client computed: fixed d, exponential `round(2^(attempt - 1) * d)`."
    ),
)
