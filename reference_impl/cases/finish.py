"""finish: moveToFinished-14 completing or failing an active job.

The job leaves `active` for `completed`/`failed` scored at `now`, with its value, finishedOn and
atm; failures drop `defa` and may emit retries-exhausted. The checks run in a fixed order (-1,
then -4/-9 for completions, then the lock, then -3 after the fields were written), and the
job's deduplication key is released only when it has no TTL and still names the job.
Retention, fetch-next and metrics have their own areas (finish-retention, finish-fetch,
finish-metrics).
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, stalled, wait_list, zset
from reference_impl.worker_ops import MoveToFinished

NOTES = {
    "finished-writes": Flag(
        "missing-write",
        "A finished job gets ZADD <target> now id, HSET returnvalue|failedReason <value> "
        "finishedOn now, and HINCRBY atm 1; processedOn and ats are left alone, and meta's "
        "opts.maxLenEvents is written as 10000 when missing.",
    ),
    "finished-event": Flag(
        "event",
        "The event is `event completed jobId <id> returnvalue <v> prev active` (failed: "
        "`failedReason <reason>`), carrying the value exactly as sent.",
    ),
    "retries-exhausted": Flag(
        "event",
        "A failure emits `retries-exhausted jobId <id> attemptsMade <atm>` when the new atm "
        ">= opts.attempts; with attempts 0 (Node's default) every final failure emits it, "
        "with attempts left none does.",
    ),
    "deferred-failure": Flag(
        "missing-write",
        "Failing a job HDELs `defa` (the stall checker's deferred failure); completing leaves "
        "it.",
    ),
    "leave-active": Flag(
        "placement",
        "The job leaves active with LREM active -1 (the right-most copy) and nothing else "
        "there is touched; a job not in active gives -3.",
    ),
    "drained": Flag(
        "event",
        "Without a fetched job, `drained` is emitted once wait, active and prioritized are all "
        "empty; another active job suppresses it.",
    ),
    "error-order": Flag(
        "precondition",
        "Order of the checks: no hash -1; completed only, pending `:dependencies` -4, then "
        "failed children in `:unsuccessful` -9 (both before the lock); then the lock; then the "
        "fields; then -3. An early code writes nothing after that point.",
    ),
    "lock": Flag(
        "lock-stall",
        "A matching lock is deleted and the id leaves `stalled`; another token's lock gives "
        "-6 and no lock -2, changing nothing; token \"0\" checks nothing and leaves the lock "
        "and the stalled member in place.",
    ),
    "no-rollback": Flag(
        "missing-write",
        "A -3 comes after the lock was deleted, the id left `stalled` and the sent fields "
        "(failedReason, stacktrace) were written; a port that checks active first or rolls "
        "back leaves a different state.",
    ),
    "dedup-release": Flag(
        "deduplication",
        "Finishing (completed or failed) DELs `de:<deid>` only when the key has no TTL and "
        "holds this job's id; a key whose TTL still runs, or that names another job, stays.",
    ),
}

#: When the seeded job finishes: a minute after it was taken.
NOW = T + 60000
STACK = '["Error: boom\\n    at process (worker.js:12:11)"]'
FAIL_FIELDS = {"failedReason": "boom", "stacktrace": STACK}
STALLED = "job stalled more than allowable limit"


def job_fields(name: str = "send-mail", **extra: str) -> dict[str, str]:
    """A job hash as an add and a fetch leave it; `extra` adds or replaces fields."""
    fields = {"name": name, "data": '{"to":"a@example.com"}', "opts": '{"attempts":3}',
              "timestamp": str(T), "delay": "0", "priority": "0",
              "processedOn": str(T + 100), "ats": "1"}
    fields.update(extra)
    return fields


def lock(token: str = "tok") -> dict[str, Any]:
    """A lock string as a fetch writes it (PX 30000)."""
    return {"string": {"value": token, "pttl": 30000}}


def active_job(job_id: str = "1", /, **extra: Any) -> dict[str, Any]:
    """A seeded active job holding lock "tok" and marked stalled; `extra` adds or replaces
    keys."""
    given: dict[str, Any] = {
        "active": wait_list(job_id),
        job_id: job_hash(job_fields()),
        f"{job_id}:lock": lock(),
        "stalled": stalled(job_id),
    }
    given.update(extra)
    return given


def complete(job_id: str = "1", **kwargs: Any) -> MoveToFinished:
    """Job.moveToCompleted at NOW with keepJobs {count: -1} unless given."""
    kwargs.setdefault("value", '{"sent":true}')
    kwargs.setdefault("keep_jobs", {"count": -1})
    return MoveToFinished(job_id, kwargs.pop("now", NOW), "completed", **kwargs)


def fail(job_id: str = "1", **kwargs: Any) -> MoveToFinished:
    """Job.moveToFailed at NOW with no attempts left (attempts 3, atm 2 seeded by callers
    that want retries-exhausted), failedReason and stacktrace sent as fields."""
    kwargs.setdefault("value", "boom")
    kwargs.setdefault("keep_jobs", {"count": -1})
    kwargs.setdefault("attempts", 3)
    kwargs.setdefault("fields", FAIL_FIELDS)
    return MoveToFinished(job_id, kwargs.pop("now", NOW), "failed", **kwargs)


def _dedup(key: dict[str, Any], owner_fields: dict[str, str] | None = None) -> dict[str, Any]:
    fields = owner_fields or job_fields(deid="mail:a@example.com",
                                        opts='{"attempts":3,"de":{"id":"mail:a@example.com"}}')
    return active_job(**{"1": job_hash(fields), "de:mail:a@example.com": key})


def _cases() -> list[Case]:
    return [
        # --- complete and fail ---------------------------------------------------------------
        Case("complete-writes",
             "Completing adds the job to completed at now with returnvalue, finishedOn, atm 1; "
             "drained follows.",
             (complete(),), ("finished-writes", "finished-event", "lock", "drained"),
             given=active_job()),
        Case("fail-writes",
             "Failing with attempts left adds the job to failed with the sent fields, finishedOn "
             "and atm 1.",
             (fail(),), ("finished-writes", "finished-event", "retries-exhausted"),
             given=active_job()),
        Case("fail-last-attempt",
             "A failure taking atm from 2 to attempts 3 emits retries-exhausted attemptsMade 3.",
             (fail(),), ("retries-exhausted",),
             given=active_job(**{"1": job_hash(job_fields(atm="2", ats="3"))})),
        Case("fail-attempts-0",
             "With attempts 0 (Node's default) the first failure already emits "
             "retries-exhausted attemptsMade 1.", (fail(attempts=0),), ("retries-exhausted",),
             given=active_job()),
        Case("fail-drops-defa",
             "Failing a job the stall checker marked deletes its defa field.",
             (fail(value=STALLED, fields={"failedReason": STALLED, "stacktrace": "[]"},
                   attempts=0),),
             ("deferred-failure",),
             given=active_job(**{"1": job_hash(job_fields(
                 stc="2", defa=STALLED, ats="3"))})),
        Case("complete-keeps-defa", "Completing leaves a defa field in place.",
             (complete(),), ("deferred-failure",),
             given=active_job(**{"1": job_hash(job_fields(defa=STALLED, stc="2"))})),
        # --- active list ---------------------------------------------------------------------
        Case("lrem-from-right", "With active [1, 2, 1] only the right-most 1 is removed.",
             (complete(),), ("leave-active", "drained"),
             given=active_job(active=wait_list("1", "2", "1"))),
        Case("other-active-job",
             "Finishing job 1 of active [2, 1] keeps job 2 and its lock, and emits no drained.",
             (complete(),), ("leave-active", "drained"),
             given=active_job(active=wait_list("2", "1"), **{"2": job_hash(job_fields("b")),
                                                             "2:lock": lock("tok2")})),
        # --- error codes ---------------------------------------------------------------------
        Case("missing-job", "An active id with a lock but no hash gives -1 and writes nothing.",
             (complete("404"),), ("error-order",),
             given={"active": wait_list("404"), "404:lock": lock()}),
        Case("pending-dependencies",
             "Completing a job whose :dependencies set is not empty gives -4 and keeps the "
             "lock.", (complete(),), ("error-order",),
             given=active_job(**{"1:dependencies": {"set": ["bull:q:7"]}})),
        Case("dependencies-before-lock",
             "Pending dependencies give -4 even with a foreign token: the lock is checked "
             "after.", (complete(token="other"),), ("error-order",),
             given=active_job(**{"1:dependencies": {"set": ["bull:q:7"]}})),
        Case("failed-children",
             "Completing a job with a member in :unsuccessful gives -9.",
             (complete(),), ("error-order",),
             given=active_job(**{"1:unsuccessful": zset([("bull:q:8", T + 50)])})),
        Case("fail-ignores-children",
             "Failing a job with pending dependencies is not blocked: the -4 check is for "
             "completions only.", (fail(),), ("error-order",),
             given=active_job(**{"1:dependencies": {"set": ["bull:q:7"]}})),
        Case("lock-mismatch",
             "Token other against lock tok gives -6 and leaves the lock and stalled member.",
             (complete(token="other"),), ("lock",), given=active_job()),
        Case("lock-missing", "An active job without a lock gives -2 for token tok.",
             (complete(),), ("lock",),
             given={k: v for k, v in active_job().items() if k != "1:lock"}),
        Case("not-active-after-writes",
             "A waiting job gives -3, yet its lock and stalled member are gone and its fields "
             "written.",
             (fail(),), ("no-rollback", "leave-active", "error-order"),
             given=active_job(active=wait_list("2"), wait=wait_list("1"),
                              **{"2": job_hash(job_fields("b")), "2:lock": lock("tok2")})),
        Case("token-0", "Token \"0\" finishes the job but leaves its lock and stalled member.",
             (complete(token="0"),), ("lock",), given=active_job()),
        # --- deduplication key ---------------------------------------------------------------
        Case("dedup-released", "A de: key without TTL that names the job is deleted.",
             (complete(),), ("dedup-release",), given=_dedup({"string": "1"})),
        Case("dedup-released-on-fail", "A failure releases the de: key just like a completion.",
             (fail(),), ("dedup-release",), given=_dedup({"string": "1"})),
        Case("dedup-ttl-kept", "A de: key whose TTL still runs is kept after the job finishes.",
             (complete(),), ("dedup-release",),
             given=_dedup({"string": {"value": "1", "pttl": 50000}})),
        Case("dedup-other-owner", "A de: key naming another job is kept.",
             (complete(),), ("dedup-release",), given=_dedup({"string": "9"})),
    ]


AREA = Area(
    "finish",
    "moveToFinished-14 completing and failing a job: the finished set, value, finishedOn, "
    "atm, events (retries-exhausted, drained), defa, the checks and their order (-1, -4, -9, "
    "-2, -6, -3), token \"0\", and the deduplication key release.",
    NOTES,
    tuple(_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "moveToFinished(id, token, now, value, target) checks in order: the job hash (-1); "
        "on completion, pending dependencies (-4) and failed children (-9); the lock (-2 "
        "none, -6 another token's; token \"0\" checks nothing). It deletes the lock, takes "
        "the id out of `stalled`, and does `LREM active -1` (-3 when absent, with nothing "
        "rolled back). Then it does `ZADD <target> now id`, writes `returnvalue` or "
        "`failedReason` and `finishedOn = now`, `HINCRBY atm 1`, and emits `completed` or "
        "`failed`, plus `retries-exhausted` when `atm >= attempts`."
    ),
)
