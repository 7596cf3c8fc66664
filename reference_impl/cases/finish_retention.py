"""finish-retention: what moveToFinished-14 keeps of finished jobs (keepJobs).

Setup of most cases: jobs a…e finished at T-50000 … T-10000 (10 s apart), each with its hash,
`:logs` and a stale `:lock`; job 1 finishes at now = T. `{count: n}` keeps the newest n
(the new job included); `{age: s}` removes jobs scored `<= now - s*1000`, newest first, at most
`limit` (default 1000), then the count trim runs; `{count: 0}` deletes the job at once.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, wait_list, zset
from reference_impl.cases.finish import active_job, complete, fail, job_fields

NOTES = {
    "count-trim": Flag(
        "boundary",
        "keepJobs {count: n} keeps the n highest-ranked members of the finished set, the "
        "just-finished job included (ZREMRANGEBYRANK 0 -(n+1)); ties at one score are ranked "
        "by member bytes, so the smallest members go first.",
    ),
    "count-direction": Flag(
        "placement", "The trims remove the oldest (lowest-scored) jobs, never the newest."
    ),
    "age-inclusive": Flag(
        "boundary",
        "keepJobs {age: s} removes scores <= now - s*1000: a job finished exactly s seconds "
        "ago goes (inclusive cutoff); fractional seconds give a fractional cutoff.",
    ),
    "age-limit": Flag(
        "placement",
        "The age trim takes at most `limit` (default 1000) expired jobs, the newest first "
        "(ZREVRANGEBYSCORE cutoff -inf LIMIT 0 limit); older expired jobs wait for later "
        "calls.",
    ),
    "age-then-count": Flag(
        "boundary", "With both age and count, the age trim runs first, then the count trim."
    ),
    "self-removal": Flag(
        "boundary",
        "{age: 0} puts the cutoff at now, so the just-finished job trims itself: its keys are "
        "deleted, yet the completed event is still emitted with the value.",
    ),
    "keep-all": Flag(
        "missing-write", "{count: -1} (removeOnComplete false) keeps every finished job."
    ),
    "remove-at-once": Flag(
        "missing-write",
        "{count: 0} (removeOnComplete true) deletes the job's hash, :logs, :dependencies, "
        ":processed, :failed and :unsuccessful without adding it to the set; the event still "
        "carries the value, and the lock (already released) is not one of these keys.",
    ),
    "trimmed-keys": Flag(
        "missing-write",
        "A trimmed job loses its hash and the keys hanging off it, but not a stale `:lock` "
        "or its `de:` key; no `removed` event is emitted.",
    ),
    "target-set": Flag(
        "key-layout", "A failure trims the failed set only; completed is untouched, and vice versa."
    ),
    "logs-kept": Flag(
        "missing-write",
        "Finishing never trims a kept job's `:logs` (only addLog applies keepLogs).",
    ),
}

OLD = "abcde"


def _old_jobs(target: str = "completed") -> dict[str, Any]:
    """Jobs a…e finished 50 s … 10 s before T in `target`, with hash, :logs and a stale lock."""
    value = {"completed": "returnvalue", "failed": "failedReason"}[target]
    given: dict[str, Any] = {
        target: zset([(name, T - 50000 + 10000 * i) for i, name in enumerate(OLD)])}
    for i, name in enumerate(OLD):
        finished = T - 50000 + 10000 * i
        given[name] = job_hash(job_fields("report", processedOn=str(finished - 400), atm="1",
                                          finishedOn=str(finished), **{value: '"ok"'}))
        given[f"{name}:logs"] = wait_list("started", "done")
        given[f"{name}:lock"] = {"string": "stale"}
    return given


def _finishing(**extra: Any) -> dict[str, Any]:
    """Job 1 active with lock tok, processed at T-500, beside the old jobs."""
    given = active_job(**{"1": job_hash(job_fields(processedOn=str(T - 500)))}, **_old_jobs())
    given.update(extra)
    return given


def _keep(keep_jobs: dict[str, Any]) -> tuple[Any, ...]:
    return (complete(now=T, value='"ok"', keep_jobs=keep_jobs),)


def _cases() -> list[Case]:
    expired = [(f"x{i:04d}", T - 100000 - i) for i in range(1002)]
    return [
        Case("count-2", "{count: 2} keeps e and the new job 1; a…d lose every key but :lock.",
             _keep({"count": 2}), ("count-trim", "count-direction", "trimmed-keys"),
             given=_finishing()),
        Case("count-1", "{count: 1} keeps only the just-finished job.",
             _keep({"count": 1}), ("count-trim",), given=_finishing()),
        Case("count-ties", "With x, m and b9 tied at one score, {count: 2} keeps x and 1.",
             _keep({"count": 2}), ("count-trim",),
             given=active_job(completed=zset([("x", T - 5000), ("m", T - 5000),
                                              ("b9", T - 5000)]))),
        Case("age-inclusive", "{age: 30} removes a, b and c (c finished exactly 30 s ago).",
             _keep({"age": 30}), ("age-inclusive", "trimmed-keys"), given=_finishing()),
        Case("age-limit-newest-first",
             "{age: 30, limit: 1} removes only c, the newest expired job; a and b stay.",
             _keep({"age": 30, "limit": 1}), ("age-limit",), given=_finishing()),
        Case("age-default-limit",
             "Without a limit the age trim removes the 1000 newest of 1002 expired jobs.",
             _keep({"age": 30}), ("age-limit",), given=active_job(completed=zset(expired))),
        Case("age-then-count", "{age: 30, count: 2} leaves e and 1.",
             _keep({"age": 30, "count": 2}), ("age-then-count",), given=_finishing()),
        Case("age-0", "{age: 0} empties completed: job 1 trims itself, its event still emitted.",
             _keep({"age": 0}), ("self-removal", "age-inclusive"), given=_finishing()),
        Case("age-fractional",
             "{age: 0.02} puts the cutoff at now - 20 ms: e (10 s old) goes, and job 1 stays.",
             _keep({"age": 0.02}), ("age-inclusive",), given=_finishing()),
        Case("keep-all", "{count: -1} keeps a…e and job 1.", _keep({"count": -1}),
             ("keep-all",), given=_finishing()),
        Case("count-0",
             "{count: 0} deletes job 1's hash, :logs, :processed and :failed; it never enters "
             "completed.", _keep({"count": 0}), ("remove-at-once",),
             given=_finishing(**{"1:logs": wait_list("started"),
                                 "1:processed": job_hash({"bull:q:5": '"x"'}),
                                 "1:failed": job_hash({"bull:q:6": "boom"})})),
        Case("fail-trims-failed",
             "A failure with {count: 1} trims failed only; completed keeps its jobs.",
             (fail(now=T, keep_jobs={"count": 1}, attempts=1),), ("target-set",),
             given=active_job(failed=zset([("f1", T - 9000), ("f2", T - 8000)]),
                              completed=zset([("c1", T - 9500)]),
                              **{"f1": job_hash(job_fields("report", failedReason="x")),
                                 "c1": job_hash(job_fields("report", returnvalue="1"))})),
        Case("logs-kept", "Finishing with {count: 5} leaves job 1's 4 log rows untouched.",
             _keep({"count": 5}), ("logs-kept",),
             given=active_job(**{"1:logs": wait_list("r1", "r2", "r3", "r4")})),
        Case("trimmed-dedup-key",
             "Trimming job a leaves its de: key, which still names the deleted job.",
             _keep({"count": 5}), ("trimmed-keys",),
             given=_finishing(**{"a": job_hash(job_fields("report", deid="d-a", atm="1",
                                                          finishedOn=str(T - 50000))),
                                 "de:d-a": {"string": "a"}})),
    ]


AREA = Area(
    "finish-retention",
    "moveToFinished-14 keepJobs: count trims (ties by member bytes), inclusive age trims with "
    "their limit (newest first), age before count, count 0, the keys a trimmed job loses, and "
    "the logs a kept job keeps.",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    example="count-2",
    rule=(
        "keepJobs `{count: n}` keeps the n highest-scored members of the finished set, the "
        "finished job included (`ZREMRANGEBYRANK 0 -(n+1)`); `{count: 0}` deletes the job "
        "at once; `{count: -1}` keeps all. `{age: s}` removes members scored `<= now - "
        "s*1000`, at most `limit` (default 1000) per call, newest first, and runs before "
        "the count trim. A trimmed job loses its hash and the keys hanging off it."
    ),
)
