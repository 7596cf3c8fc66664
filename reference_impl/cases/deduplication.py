"""deduplication: the `de:<id>` key of an add with `deduplication: {id, ttl?, extend?, replace?}`
(stored in opts as `de`), the `deduplicated` event, and removeDeduplicationKey-1.

The first add owns `de:<id>` (SET NX, PX ttl when given) and stores `deid`; a later add with the
same id stores nothing and returns the owner's id, though `id` is still incremented.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, wait_list, zset
from reference_impl.ops import Add
from reference_impl.worker_ops import RemoveDeduplicationKey, RemoveJob

NOTES = {
    "owner": Flag(
        "deduplication",
        "The first add with a deduplication id SETs de:<id> to its job id (NX, PX ttl when "
        "ttl > 0, else no expiry) and stores deid = <id> in the job hash.",
    ),
    "hit": Flag(
        "deduplication",
        "An add whose de:<id> is held returns the owner's id, stores nothing (no hash, no "
        "list, no zset, no pc INCR) but still INCRs id, and emits deduplicated jobId <owner> "
        "deduplicationId <id> deduplicatedJobId <rejected id>.",
    ),
    "stale": Flag(
        "deduplication",
        "A key without expiry whose owner hash is gone is stale: the add takes it over and "
        "goes on, without a deduplicated event. A key with an expiry deduplicates even to a "
        "job that is gone.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.3.7",),
    ),
    "extend": Flag(
        "deduplication",
        "extend: a hit re-SETs de:<id> to the owner with a fresh PX ttl.",
    ),
    "replace": Flag(
        "deduplication",
        "replace: a delayed owner is removed (removed prev delayed) and the new job owns the "
        "key (its expiry kept); the deduplicated event swaps the roles and precedes added. An "
        "owner in any other state keeps the key, and the add returns its id without a "
        "deduplicated event.",
    ),
    "custom-id": Flag(
        "deduplication",
        "A duplicate custom job id is checked first: duplicated wins and no de: key is written.",
    ),
    "remove-key": Flag(
        "deduplication",
        "removeDeduplicationKey DELs de:<id> only when it holds the given job id (1), else 0.",
    ),
    "remove-job": Flag(
        "deduplication",
        "removeJob DELs the job's de:<deid> when it holds this job, even while its expiry runs; "
        "a key held by another job stays.",
    ),
}


def dedup_add(name: str, dedup_id: str, *, ttl: int | None = None, delay: int | None = None,
              priority: int | None = None, job_id: str | None = None,
              **flags: bool) -> Add:
    """An add with the deduplication option as clients store it (`opts.de`)."""
    de: dict[str, Any] = {"id": dedup_id}
    if ttl is not None:
        de["ttl"] = ttl
    de.update(flags)
    opts: dict[str, Any] = {"de": de}
    if delay is not None:
        opts["delay"] = delay
    if priority is not None:
        opts["priority"] = priority
    return Add(name, T, {"n": name}, opts, job_id)


def _owned(owner: str, dedup_id: str = "d1", pttl: int | None = None, **extra: Any
           ) -> dict[str, Any]:
    """A waiting job `owner` that owns de:<dedup_id>."""
    key: Any = owner if pttl is None else {"value": owner, "pttl": pttl}
    given: dict[str, Any] = {
        "id": {"string": owner}, "wait": wait_list(owner), f"de:{dedup_id}": {"string": key},
        owner: job_hash({"name": "a", "timestamp": str(T), "delay": "0", "priority": "0",
                         "deid": dedup_id}),
    }
    given.update(extra)
    return given


def _cases() -> list[Case]:
    return [
        Case("first-add-owns", "A standard add with deduplication d1 becomes job 1, writes "
              "de:d1 = 1 without expiry and deid d1.", (dedup_add("a", "d1"),), ("owner",)),
        Case("first-add-ttl", "An add with ttl 5000 writes de:d2 = 1 with PX 5000.",
              (dedup_add("a", "d2", ttl=5000),), ("owner",)),
        Case("first-delayed-add", "A delayed add with a deduplication id is scored and owns "
              "the key.", (dedup_add("a", "d1", delay=2000),), ("owner",)),
        Case("first-prioritized-add", "A prioritized add with a deduplication id gets pc 1 "
              "and owns the key.", (dedup_add("a", "d1", priority=3),), ("owner",)),
        Case("second-add-deduplicated", "A second add with d1 returns 1, leaves id at 2 and "
              "writes no job 2.", (dedup_add("a", "d1"), dedup_add("b", "d1")),
              ("hit", "owner")),
        Case("delayed-add-deduplicated", "A delayed add hitting d1 writes nothing to "
              "delayed and no marker.", (dedup_add("b", "d1", delay=2000),), ("hit",),
              _owned("1")),
        Case("prioritized-add-deduplicated", "A prioritized add hitting d1 leaves pc "
              "untouched.", (dedup_add("b", "d1", priority=3),), ("hit",),
              _owned("1", pc={"string": "4"})),
        Case("stale-key-new-ttl", "A stale key taken over by an add with ttl 5000 gets PX "
              "5000.", (dedup_add("b", "d1", ttl=5000),), ("stale",),
              {"id": {"string": "9"}, "de:d1": {"string": "9"}}),
        Case("stale-key-taken-over", "A key without expiry naming a gone job is taken over "
              "by the new job, with no deduplicated event.",
              (dedup_add("b", "d1"),), ("stale",),
              {"id": {"string": "9"}, "de:d1": {"string": "9"}}),
        Case("expiring-key-dead-owner", "A key with an expiry naming a job that is gone "
              "still deduplicates to it.", (dedup_add("b", "d1"),), ("stale",),
              {"id": {"string": "9"}, "de:d1": {"string": {"value": "9", "pttl": 5000}}}),
        Case("extend-refreshes", "extend with ttl 5000 re-SETs de:d1 (PX 60000 left) to the "
              "owner with PX 5000.", (dedup_add("b", "d1", ttl=5000, extend=True),),
              ("extend", "hit"), _owned("1", pttl=60000)),
        Case("no-extend-keeps-expiry", "Without extend a hit leaves the key's PX 1000.",
              (dedup_add("b", "d1", ttl=8000),), ("extend", "hit"), _owned("1", pttl=1000)),
        Case("replace-delayed-owner", "replace removes a delayed owner; the new job owns the "
              "key; deduplicated (new, old) precedes added.",
              (dedup_add("b", "d1", ttl=5000, delay=3000, replace=True),), ("replace",),
              {"id": {"string": "1"}, "de:d1": {"string": {"value": "1", "pttl": 5000}},
               "delayed": zset([("1", (T + 3000) * 0x1000)]),
               "1": job_hash({"name": "a", "timestamp": str(T), "delay": "3000",
                              "priority": "0", "deid": "d1"})}),
        Case("replace-waiting-owner", "replace with an owner in wait returns the owner's id "
              "and emits no deduplicated event.",
              (dedup_add("b", "d1", ttl=5000, delay=3000, replace=True),), ("replace",),
              _owned("1", pttl=5000)),
        Case("custom-id-duplicate-first", "An add of existing custom id x with a new "
              "deduplication id emits duplicated and writes no de: key.",
              (dedup_add("b", "d9", job_id="x"),), ("custom-id",),
              {"id": {"string": "1"}, "wait": wait_list("x"),
               "x": job_hash({"name": "a", "timestamp": str(T)})}),
        Case("remove-key-owner", "removeDeduplicationKey(d1, 1) deletes the key and "
              "returns 1.", (RemoveDeduplicationKey("d1", "1"),), ("remove-key",),
              _owned("1", pttl=5000)),
        Case("remove-key-other-job", "removeDeduplicationKey(d1, 2) keeps the key of job "
              "1 and returns 0.", (RemoveDeduplicationKey("d1", "2"),), ("remove-key",),
              _owned("1")),
        Case("remove-key-missing", "removeDeduplicationKey without a key returns 0.",
              (RemoveDeduplicationKey("d1", "1"),), ("remove-key",)),
        Case("remove-job-releases", "removeJob of the owner deletes de:d1 while its PX "
              "runs.", (RemoveJob("1"),), ("remove-job",), _owned("1", pttl=5000)),
        Case("remove-job-other-owner", "removeJob of a job whose deid key names another "
              "job leaves the key.", (RemoveJob("2"),), ("remove-job",),
              {**_owned("1"), "2": job_hash({"name": "b", "deid": "d1"})}),
    ]


AREA = Area(
    "deduplication",
    "Deduplication: de:<id> on standard, delayed and prioritized adds (NX, ttl, stale keys, "
    "extend, replace), the deduplicated event, and the key's release by "
    "removeDeduplicationKey-1 and removeJob-2 (release on completion is in finish).",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "An add with `opts.de = {id, ttl}` does `SET de:<id> <job id> NX` (PX ttl when ttl "
        "> 0) and stores `deid = <id>` in the job hash. While the key is held, an add "
        "returns the owner's id, stores nothing but still INCRs `id`, and emits "
        "`deduplicated`; with `extend` it re-SETs the key with a fresh PX ttl; with "
        "`replace` a delayed owner is removed and the new job takes the key. From 6.3.7 a "
        "key without expiry whose owner hash is gone is stale and is taken over. "
        "removeDeduplicationKey DELs the key only when it holds the given job."
    ),
)
