"""rate-limit: the limiter a fetch counts against, the push-back of a rate-limited job
(moveJobFromActiveToWait-9) and Queue.getRateLimitTtl (getRateLimitTtl-2).

`limiter` is a string counter: each fetched job INCRs it, the first INCR sets PX duration, and a
fetch is refused while the counter has reached max and the key still has a positive PTTL.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, add, job_hash, stalled, wait_list, zset
from reference_impl.ops import MoveToActive
from reference_impl.worker_ops import GetRateLimitTtl, MoveJobFromActiveToWait

NOTES = {
    "count": Flag(
        "rate-limit",
        "A fetch with a max INCRs limiter for the job it hands out and sets PX duration on the "
        "first hit only; the job that reaches max is still handed out, the next fetch gets "
        "{job: null, ttl: PTTL, next: 0}.",
    ),
    "sources": Flag(
        "rate-limit",
        "meta.max wins over the worker's limiter max; the worker's duration wins over "
        "meta.duration (Queue.setGlobalRateLimit against Worker limiter).",
    ),
    "no-expiry": Flag(
        "rate-limit",
        "A counter without an expiry never limits: it keeps being INCRed.",
    ),
    "order": Flag(
        "rate-limit",
        "The fetch sweeps due delayed jobs before the rate-limit check, and the rate-limit "
        "check comes before pause.",
    ),
    "deferred-failure": Flag(
        "rate-limit",
        "A job carrying defa (a deferred stall failure) is not counted by the limiter.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.2.2",),
    ),
    "worker-name": Flag(
        "missing-write",
        "A fetch with a worker name stores it in the job hash as pb.",
    ),
    "push-back": Flag(
        "rate-limit",
        "moveJobFromActiveToWait releases the lock and stalled, RPUSHes the job to wait (the "
        "front: it runs next) with marker \"0\" unless paused or maxed, emits waiting prev "
        "active, and returns the limiter's PTTL (0 when none).",
    ),
    "push-back-priority": Flag(
        "placement",
        "A pushed-back prioritized job goes to prioritized at P*2^32, the front of its tier, "
        "with no pc INCR and no marker.",
    ),
    "push-back-codes": Flag(
        "lock-stall",
        "moveJobFromActiveToWait gives -1 without a job hash, -2 without a lock, -6 for another "
        "token's lock; there is no -3: a job not in active is left, its lock deleted all the "
        "same.",
    ),
    "ttl-script": Flag(
        "rate-limit",
        "getRateLimitTtl returns the PTTL once the counter has reached maxJobs (meta.max when "
        "maxJobs is 0), else 0; with no max anywhere it returns the raw PTTL (-1 without "
        "expiry, -2 without key).",
    ),
}

WINDOW = 5000


def _limit(count: int, pttl: int | None = WINDOW) -> dict[str, Any]:
    value: Any = str(count) if pttl is None else {"value": str(count), "pttl": pttl}
    return {"limiter": {"string": value}}


def _active(job_id: str = "1", priority: int = 0, **extra: Any) -> dict[str, Any]:
    given: dict[str, Any] = {
        "active": wait_list(job_id), "stalled": stalled(job_id),
        job_id: job_hash({"name": "a", "timestamp": str(T), "delay": "0",
                          "priority": str(priority), "processedOn": str(T), "ats": "1"}),
        f"{job_id}:lock": {"string": {"value": "tok", "pttl": 30000}},
    }
    given.update(extra)
    return given


def _ready(*job_ids: str, **extra: Any) -> dict[str, Any]:
    given: dict[str, Any] = {"wait": wait_list(*job_ids)}
    for job_id in job_ids:
        given[job_id] = job_hash({"name": "a", "timestamp": str(T), "delay": "0",
                                  "priority": "0"})
    given.update(extra)
    return given


def fetch_limited(now: int = T, limit: int = 1, duration: int = 1000) -> MoveToActive:
    """A fetch by a worker limited to `limit` jobs per `duration` ms."""
    return MoveToActive(now, limiter={"max": limit, "duration": duration})


def _fetch_cases() -> list[Case]:
    return [
        Case("first-fetch-starts-window", "The first counted fetch sets limiter 1 with PX "
              "duration.", (add("a"), fetch_limited(T, 2, 1000)), ("count",)),
        Case("max-reached-next-refused", "With max 1 the first fetch gets its job and the "
              "second returns job null with the window's PTTL.",
              (add("a"), add("b"), fetch_limited(T), fetch_limited(T)), ("count",)),
        Case("incr-keeps-window", "A counted fetch INCRs a running window without resetting "
              "its PX.", (fetch_limited(T, 3, 1000),), ("count",), _ready("1", **_limit(1))),
        Case("meta-limit-alone", "meta max and duration limit a worker that has no limiter "
              "of its own.", (MoveToActive(T), MoveToActive(T)), ("sources",),
              _ready("1", "2", meta=job_hash({"max": "1", "duration": "3000"}))),
        Case("meta-max-worker-duration", "meta max 1 wins over the worker's max 5; the "
              "worker's duration 7000 wins over meta's 3000.",
              (fetch_limited(T, 5, 7000), fetch_limited(T, 5, 7000)), ("sources",),
              _ready("1", "2", meta=job_hash({"max": "1", "duration": "3000"}))),
        Case("counter-without-expiry", "A counter of 10 without an expiry does not limit a "
              "max 2 worker; it becomes 11.", (fetch_limited(T, 2, 1000),), ("no-expiry",),
              _ready("1", **_limit(10, None))),
        Case("limited-fetch-sweeps", "A rate-limited fetch still promotes a due delayed job "
              "into wait.", (add("d", delay=1000), fetch_limited(T + 1000)), ("order",),
              _limit(1)),
        Case("limit-before-pause", "A paused queue at its limit answers with the PTTL, not "
              "the paused reply.", (fetch_limited(T),), ("order",),
              _ready("1", meta=job_hash({"paused": "1"}), **_limit(1))),
        Case("deferred-failure-not-counted", "Fetching a job with defa leaves the limiter "
              "untouched.", (fetch_limited(T, 2, 1000),), ("deferred-failure",),
              {"wait": wait_list("1"), "1": job_hash({"name": "a", "timestamp": str(T),
                                                      "defa": "stalled"})}),
        Case("worker-name", "A fetch by worker w1 writes pb w1 beside processedOn.",
              (add("a"), MoveToActive(T, name="w1")), ("worker-name",)),
    ]


def _push_back_cases() -> list[Case]:
    return [
        Case("push-back-front", "A pushed-back job goes to wait's right end (before 2), "
              "gets marker 0 and returns the PTTL.",
              (MoveJobFromActiveToWait("1"),), ("push-back",),
              {**_active(wait=wait_list("2"), **_limit(9007199254740991)),
               "2": job_hash({"name": "b"})}),
        Case("push-back-no-limiter", "Without a limiter key the push-back returns 0.",
              (MoveJobFromActiveToWait("1"),), ("push-back",), _active()),
        Case("push-back-prioritized", "A priority 3 job goes back to prioritized at 3*2^32 "
              "with pc and marker untouched.", (MoveJobFromActiveToWait("1"),),
              ("push-back-priority",),
              {**_active(priority=3, pc={"string": "7"},
                         prioritized=zset([("9", 3 * 2**32 + 7)])),
               "9": job_hash({"name": "p", "priority": "3"})}),
        Case("push-back-paused", "A push-back on a paused queue writes no marker.",
              (MoveJobFromActiveToWait("1"),), ("push-back",),
              _active(meta=job_hash({"paused": "1"}))),
        Case("push-back-not-active", "A job not in active stays put, loses its lock, gets no "
              "event, and the PTTL is returned.",
              (MoveJobFromActiveToWait("1"),), ("push-back-codes",),
              {**{k: v for k, v in _active().items() if k != "active"},
               **_limit(3)}),
        Case("push-back-foreign-token", "A push-back with another token's lock returns -6 "
              "and changes nothing.", (MoveJobFromActiveToWait("1", "other"),),
              ("push-back-codes",), _active()),
        Case("push-back-no-lock", "A push-back without a lock returns -2.",
              (MoveJobFromActiveToWait("1"),), ("push-back-codes",),
              {k: v for k, v in _active().items() if k != "1:lock"}),
        Case("push-back-no-job", "A push-back of a job without a hash returns -1.",
              (MoveJobFromActiveToWait("5"),), ("push-back-codes",), _active()),
        Case("push-back-refetch", "The pushed-back job is fetched again with ats 2 and atm "
              "unset.", (MoveJobFromActiveToWait("1"), MoveToActive(T + 10, "tok2")),
              ("push-back",), _active()),
    ]


def _ttl_cases() -> list[Case]:
    counted = _limit(3, 4000)
    return [
        Case("ttl-below-max", "getRateLimitTtl(5) with counter 3 returns 0.",
              (GetRateLimitTtl(5),), ("ttl-script",), counted),
        Case("ttl-at-max", "getRateLimitTtl(3) with counter 3 returns the PTTL.",
              (GetRateLimitTtl(3),), ("ttl-script",), counted),
        Case("ttl-meta-max", "getRateLimitTtl(0) uses meta max 3: the PTTL.",
              (GetRateLimitTtl(0),), ("ttl-script",),
              {**counted, "meta": job_hash({"max": "3"})}),
        Case("ttl-meta-max-not-reached", "getRateLimitTtl(0) with meta max 10 returns 0.",
              (GetRateLimitTtl(0),), ("ttl-script",),
              {**counted, "meta": job_hash({"max": "10"})}),
        Case("ttl-raw", "getRateLimitTtl(0) without any max returns the raw PTTL.",
              (GetRateLimitTtl(0),), ("ttl-script",), counted),
        Case("ttl-raw-no-expiry", "getRateLimitTtl(0) without any max on a counter without "
              "expiry returns -1.", (GetRateLimitTtl(0),), ("ttl-script",), _limit(3, None)),
        Case("ttl-raw-no-key", "getRateLimitTtl(0) without a limiter key returns -2.",
              (GetRateLimitTtl(0),), ("ttl-script",)),
        Case("ttl-no-expiry-at-max", "getRateLimitTtl(2) on a counter 3 without expiry "
              "returns 0.", (GetRateLimitTtl(2),), ("ttl-script", "no-expiry"),
              _limit(3, None)),
    ]


AREA = Area(
    "rate-limit",
    "Rate limiting: the limiter a worker fetch counts against (sources of max and duration, "
    "the window, what is not counted), the push-back of a rate-limited job "
    "(moveJobFromActiveToWait-9), getRateLimitTtl-2, and the worker name a fetch stores.",
    NOTES,
    tuple(_fetch_cases() + _push_back_cases() + _ttl_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "A fetch with a max (meta.max over the worker's limiter max; the worker's duration "
        "over meta.duration) INCRs `limiter` for each job it hands out and sets PX duration "
        "on the first; once the counter has reached max with a live PTTL, the next fetch "
        "returns `{job: null, ttl: PTTL}`. From 6.2.2 jobs carrying `defa` are not counted. "
        "moveJobFromActiveToWait puts a job back at the front of wait; getRateLimitTtl "
        "returns the PTTL once the counter has reached max."
    ),
)
