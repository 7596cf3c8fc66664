"""locks: renewing and releasing a worker's lock (extendLock-2, extendLocks-1, releaseLock-1).

A lock is `<id>:lock` holding the worker's token with PX lockDuration. Renewal re-sets it with
a fresh PX only while the token holds it and takes the id out of `stalled`, so the next stall
check spares the job. A missing lock is never re-created.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, stalled, wait_list
from reference_impl.worker_ops import ExtendLock, ExtendLocks, ReleaseLock

NOTES = {
    "renew": Flag(
        "lock-stall",
        "extendLock re-sets the lock with SET token PX duration while GET lock equals the "
        "token, and SREMs the id from stalled; it returns 1.",
    ),
    "foreign-token": Flag(
        "lock-stall",
        "Another token's lock is neither renewed nor released (0), and stalled is left: a port "
        "that ignores the token lets two workers own one job.",
    ),
    "no-recreate": Flag(
        "lock-stall",
        "A lock that expired is not re-created by a renewal (0): the job may already be back in "
        "wait and owned by another worker.",
    ),
    "batch": Flag(
        "lock-stall",
        "extendLocks renews each (id, token) pair alike and returns the ids it could not renew, "
        "in input order; an id without a token counts as a mismatch.",
    ),
    "release": Flag(
        "lock-stall",
        "releaseLock DELs the lock when the token holds it (1), else 0; it leaves stalled.",
    ),
}

LOCKED = 30000


def _held(*job_ids: str, tokens: tuple[str, ...] = ()) -> dict[str, Any]:
    """Active jobs, each holding its token's lock (default "tok") for 30 s, all suspected."""
    given: dict[str, Any] = {"active": wait_list(*job_ids), "stalled": stalled(*job_ids)}
    for index, job_id in enumerate(job_ids):
        token = tokens[index] if index < len(tokens) else "tok"
        given[job_id] = job_hash({"name": "a", "timestamp": str(T), "processedOn": str(T),
                                  "ats": "1"})
        given[f"{job_id}:lock"] = {"string": {"value": token, "pttl": LOCKED}}
    return given


def _cases() -> list[Case]:
    unlocked = {**_held("1"), "1:lock": {"string": "tok"}}
    expired = {k: v for k, v in _held("1").items() if k != "1:lock"}
    return [
        Case("extend-renews", "extendLock with the holder's token sets PX 60000, takes 1 out "
              "of stalled and returns 1.", (ExtendLock("1", "tok", 60000),), ("renew",),
              _held("1")),
        Case("extend-spares-other-suspects", "extendLock takes only its own id out of "
              "stalled.", (ExtendLock("1", "tok", 60000),), ("renew",),
              {**_held("1", "2"), "2:lock": {"string": {"value": "tok2", "pttl": LOCKED}}}),
        Case("extend-foreign-token", "extendLock with another token returns 0 and changes "
              "nothing.", (ExtendLock("1", "other", 60000),), ("foreign-token",), _held("1")),
        Case("extend-expired", "extendLock on an expired lock returns 0 and writes no lock.",
              (ExtendLock("1", "tok", 60000),), ("no-recreate",), expired),
        Case("extend-gives-expiry", "extendLock gives a lock without an expiry PX 60000.",
              (ExtendLock("1", "tok", 60000),), ("renew",), unlocked),
        Case("extend-many-all", "extendLocks renewing every pair returns an empty list and "
              "empties stalled.", (ExtendLocks(("1", "2"), ("t1", "t2"), 50000),),
              ("batch",), _held("1", "2", tokens=("t1", "t2"))),
        Case("extend-many-mixed", "extendLocks over [held, wrong token, expired, no job] "
              "returns the last three ids in input order.",
              (ExtendLocks(("1", "2", "3", "4"), ("t1", "zz", "t3", "t4"), 50000),),
              ("batch", "foreign-token", "no-recreate"),
              {k: v for k, v in _held("1", "2", "3", tokens=("t1", "t2", "t3")).items()
               if k != "3:lock"}),
        Case("extend-many-missing-token", "extendLocks with fewer tokens than ids fails the "
              "ids without one.", (ExtendLocks(("1", "2"), ("t1",), 50000),), ("batch",),
              _held("1", "2", tokens=("t1", "t2"))),
        Case("release-held", "releaseLock with the holder's token deletes the lock, returns 1 "
              "and leaves stalled.", (ReleaseLock("1", "tok"),), ("release",), _held("1")),
        Case("release-foreign-token", "releaseLock with another token returns 0 and keeps "
              "the lock.", (ReleaseLock("1", "other"),), ("release", "foreign-token"),
              _held("1")),
        Case("release-expired", "releaseLock without a lock returns 0.",
              (ReleaseLock("1", "tok"),), ("release",), expired),
    ]


AREA = Area(
    "locks",
    "Lock renewal and release (extendLock-2, extendLocks-1, releaseLock-1): the token check, "
    "the fresh PX, stalled, and what is never re-created.",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "extendLock(id, token, d) does `SET <id>:lock token PX d` only while `GET "
        "<id>:lock` equals the token, and SREMs the id from `stalled` (1; else 0, and an "
        "expired lock is not re-created). extendLocks does the same for each (id, token) "
        "pair and returns the ids it could not renew, in input order. releaseLock DELs the "
        "lock only for its holder."
    ),
)
