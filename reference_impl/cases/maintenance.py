"""maintenance: what an admin action writes (drain, clean, obliterate, retry and promote in
bulk, reprocess a finished job, save a stack trace, remove orphaned jobs), from 6.0.0.

The state is mostly built by the ops a queue sees (adds, fetches, finishes, flows, schedulers)
and seeded where a client cannot make it (a job without its time fields, an orphaned hash).
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, S, T, add, fetch, job_hash, wait_list, zset
from reference_impl.cases.deduplication import dedup_add
from reference_impl.cases.finish import NOW, complete, fail, lock
from reference_impl.cases.flow_add import P
from reference_impl.cases.flow_cross_queue import node2, on2
from reference_impl.cases.flow_insert import flow, node
from reference_impl.maintenance_ops import (
    CleanJobsInSet,
    Drain,
    MoveJobsToWait,
    Obliterate,
    RemoveOrphanedJobs,
    ReprocessJob,
    SaveStacktrace,
)
from reference_impl.ops import Pause, Step
from reference_impl.scheduler_ops import AddJobScheduler
from reference_impl.worker_ops import AddLog

NOTES = {
    "drain": Flag(
        "missing-write",
        "drain deletes every job of wait, a legacy paused list and prioritized (and delayed "
        "when asked) with its hash, logs and dependency keys; active, finished and "
        "waiting-children jobs, the markers, `pc` and `id` stay; no event.",
    ),
    "drain-scheduler": Flag(
        "placement",
        "drain spares each job scheduler's current iteration (`repeat:<id>:<score>`); in a "
        "list it LTRIMs as many ids off the head as it deleted, so a spared iteration ahead "
        "of the last deleted job leaves the list and that job's id stays without its hash.",
    ),
    "hard-removal": Flag(
        "flow",
        "A job drain, clean or obliterate deletes leaves its parent's dependencies; when it was "
        "the last, the parent leaves waiting-children and, in the same queue, is deleted too "
        "(another queue's parent goes to its wait, with a marker and no event). The job's "
        "deduplication key goes when it names the job.",
    ),
    "clean-finished": Flag(
        "boundary",
        "Cleaning completed or failed takes the jobs scored (finishedOn) up to the timestamp "
        "inclusive, lowest first, at most `limit` (0: all), answers their ids and writes one "
        "`cleaned` event with the count.",
    ),
    "clean-age": Flag(
        "boundary",
        "Cleaning wait, paused, active, delayed or prioritized reads a job's age from the first "
        "field it has (finishedOn, processedOn, timestamp for lists; processedOn, timestamp "
        "for delayed; timestamp for prioritized) and compares it to the timestamp as text, "
        "byte by byte; a job with none of them is old. A list is read from its tail when "
        "limited.",
    ),
    "clean-spared": Flag(
        "lock-stall",
        "Cleaning active spares locked jobs; cleaning a list, delayed or prioritized spares a "
        "job scheduler's current iteration.",
    ),
    "obliterate": Flag(
        "precondition",
        "obliterate answers -1 on a queue that is not paused and -2 with active jobs unless "
        "forced, removing nothing; otherwise it removes up to `count` jobs from active (their "
        "locks too), delayed, the schedulers (and their hashes), completed, wait, paused, "
        "prioritized and failed, in that order: 1 when the count ran out, else 0 after "
        "deleting the queue's own keys.",
    ),
    "obliterate-left": Flag(
        "missing-write",
        "obliterate leaves waiting-children and its parents, the limiter, and deduplication "
        "keys of jobs that no longer hold them.",
    ),
    "to-wait": Flag(
        "placement",
        "moveJobsToWait LPUSHes up to `count` jobs of the set scored up to the timestamp "
        "(lowest first) to wait, a prioritized one too, with a `waiting` event each (prev: the "
        "set) and marker 0 unless paused or maxed; finished jobs lose finishedOn, processedOn "
        "and their returnvalue or failedReason. It answers 1 when it moved `count` jobs, "
        "else 0.",
    ),
    "retry-child": Flag(
        "flow",
        "From 6.3.15 a retried child (moveJobsToWait; reprocessJob before that too) leaves "
        "its parent's :processed, :failed or :unsuccessful and is pending in :dependencies "
        "again; the parent stays where it is.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.3.15",),
    ),
    "reprocess": Flag(
        "placement",
        "reprocessJob moves a job of the named finished set to wait (LPUSH, RPUSH for lifo) "
        "with a `waiting` event, dropping finishedOn, processedOn, its returnvalue or "
        "failedReason, and atm or ats on request; from 6.3.15 a job with a priority goes to "
        "prioritized with a fresh `pc`. -1 without the job, -3 when not in the set.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.3.15",),
    ),
    "stacktrace": Flag(
        "missing-write",
        "saveStacktrace writes the stacktrace and failedReason fields (0), or answers -1 "
        "without the job.",
    ),
    "orphans": Flag(
        "key-layout",
        "removeOrphanedJobs deletes each candidate that no list, sorted set or set among the "
        "client's key names holds, with its logs, dependencies, processed, failed, "
        "unsuccessful and lock keys, and counts it whether or not it had keys; an id that is "
        "a member of `marker` (\"0\", \"1\") counts as held.",
    ),
}

SINCE = versions.WORKER_SINCE
RETRY_SINCE = versions.RETRY_RESTORES_DEPENDENCY
EVERY = 60_000


def _ready(*names: str) -> tuple[Step, ...]:
    """Standard adds at T of jobs 1..n."""
    return tuple(add(name) for name in names)


def _mixed() -> tuple[Step, ...]:
    """Job 1 taken (active), 2 and 3 in wait, 4 prioritized, 5 delayed; 2 has a log."""
    return (add("a"), add("b"), add("c"), fetch(T + 10), add("p", priority=3),
            add("d", delay=5000), AddLog("2", "row"))


def _scheduler(start: int | None = None) -> AddJobScheduler:
    """An every-minute scheduler `s` upserted at T: its first iteration in wait, or delayed
    from `start`."""
    return AddJobScheduler("s", T, "tick", every=EVERY, start_date=start,
                           job_opts={"repeat": {"every": EVERY}})


def _done(*names: str) -> tuple[Step, ...]:
    """Each job (its id its name) added, taken and completed at NOW + its index (scores NOW,
    NOW+1, ...)."""
    steps: list[Step] = []
    for index, name in enumerate(names):
        steps += [add(name, job_id=name), fetch(T + 10), complete(name, now=NOW + index)]
    return tuple(steps)


def _failed(*names: str) -> tuple[Step, ...]:
    """Each job (its id its name) added, taken and failed at NOW + its index."""
    steps: list[Step] = []
    for index, name in enumerate(names):
        steps += [add(name, job_id=name), fetch(T + 10), fail(name, now=NOW + index)]
    return tuple(steps)


def _drain_cases() -> list[Case]:
    return [
        Case("drain-ready-jobs", "drain() deletes wait and prioritized jobs with their keys; "
             "active and delayed stay, no event.", (*_mixed(), Drain()), ("drain",),
             since=SINCE),
        Case("drain-delayed", "drain(true) deletes the delayed jobs too; the delayed marker "
             "stays.", (*_mixed(), Drain(delayed=True)), ("drain",), since=SINCE),
        Case("drain-finished-stay", "drain leaves completed and failed jobs.",
             (*_done("a"), *_failed("b"), add("c"), Drain(delayed=True)), ("drain",),
             since=SINCE),
        Case("drain-scheduler-delayed", "drain(true) spares a scheduler's delayed iteration.",
             (_scheduler(start=T + 5000), add("x", delay=100), Drain(delayed=True)),
             ("drain-scheduler",), since=SINCE),
        Case("drain-scheduler-in-wait", "A spared iteration ahead of the last deleted job: "
             "LTRIM drops it; that job's id stays, hashless.",
             (add("x"), _scheduler(), add("y"), Drain()), ("drain-scheduler",), since=SINCE),
        Case("drain-last-child", "Draining a parent's last pending child deletes the parent "
             "(same queue) and its entry.",
             (flow(node(P, node("c"))), Drain()), ("hard-removal",), since=SINCE),
        Case("drain-child-not-last", "A drained child with a sibling still pending leaves the "
             "parent waiting for it.",
             (flow(node(P, node("c1"), node("c2"))), fetch(T + 10), Drain()),
             ("hard-removal",), since=SINCE),
        Case("drain-parent-elsewhere", "A drained last child releases its parent in another "
             "queue to that queue's wait, with no event.",
             (flow(node(P, node2("c"))), on2(Drain())), ("hard-removal",), since=SINCE,
             needs=("shared-slot",)),
        Case("drain-dedup-key", "drain deletes a job's deduplication key that names it.",
             (dedup_add("a", "d1"), Drain()), ("hard-removal",), since=SINCE),
    ]


def _seeded_job(job_id: str, **fields: str) -> dict[str, Any]:
    return {job_id: job_hash({"name": job_id, **fields})}


def _clean_cases() -> list[Case]:
    ages = {"wait": wait_list("new", "mid", "old"),
            **_seeded_job("new", timestamp=str(T + 200)),
            **_seeded_job("mid", timestamp=str(T + 100), processedOn=str(T + 300)),
            **_seeded_job("old", timestamp=str(T))}
    return [
        Case("clean-completed", "Cleaning completed at NOW+1 takes the jobs finished up to it, "
             "oldest first, and a `cleaned` event.",
             (*_done("a", "b", "c"), CleanJobsInSet("completed", NOW + 1)),
             ("clean-finished",), since=SINCE),
        Case("clean-completed-limit", "limit 1 cleans only the oldest finished job.",
             (*_done("a", "b"), CleanJobsInSet("completed", NOW + 5, 1)),
             ("clean-finished",), since=SINCE),
        Case("clean-failed", "Cleaning failed reads the failed set; completed stays.",
             (*_done("a"), *_failed("b"), CleanJobsInSet("failed", NOW + 5)),
             ("clean-finished",), since=SINCE),
        Case("clean-wait-by-age", "wait at T+150: old (timestamp T) goes; mid's processedOn "
             "T+300 keeps it; new stays.", (CleanJobsInSet("wait", T + 150),),
             ("clean-age",), given=ages, since=SINCE),
        Case("clean-wait-limit-from-tail", "A limited clean of a list reads its tail: limit 1 "
             "takes old, not new.", (CleanJobsInSet("wait", T + 500, 1),), ("clean-age",),
             given=ages, since=SINCE),
        Case("clean-age-as-text", "A timestamp of \"999\" is not <= \"1700000000000\" as "
             "text: that job stays.", (CleanJobsInSet("wait", T),), ("clean-age",),
             given={"wait": wait_list("short", "none"),
                    **_seeded_job("short", timestamp="999"), **_seeded_job("none")},
             since=SINCE),
        Case("clean-active-locked", "Cleaning active spares a job holding its lock; one whose "
             "lock expired goes.",
             (CleanJobsInSet("active", T + 500),), ("clean-spared",),
             given={"active": wait_list("held", "free"), "held:lock": lock(),
                    **_seeded_job("held", processedOn=str(T)),
                    **_seeded_job("free", processedOn=str(T))}, since=SINCE),
        Case("clean-delayed", "Cleaning delayed reads processedOn before timestamp: a retried "
             "job processed late stays.",
             (CleanJobsInSet("delayed", T + 150),), ("clean-age",),
             given={"delayed": zset([("fresh", (T + 9000) * S), ("retried", (T + 5000) * S)]),
                    **_seeded_job("fresh", timestamp=str(T)),
                    **_seeded_job("retried", timestamp=str(T), processedOn=str(T + 200))},
             since=SINCE),
        Case("clean-prioritized", "Cleaning prioritized reads timestamp only.",
             (CleanJobsInSet("prioritized", T + 50),), ("clean-age",),
             given={"prioritized": zset([("a", 3 << 32), ("b", (3 << 32) + 1)]),
                    **_seeded_job("a", timestamp=str(T), processedOn=str(T + 999)),
                    **_seeded_job("b", timestamp=str(T + 100))}, since=SINCE),
        Case("clean-scheduler-iteration", "Cleaning wait spares a scheduler's current "
             "iteration; an ordinary job goes.",
             (_scheduler(), add("x"), CleanJobsInSet("wait", T + 10)), ("clean-spared",),
             since=SINCE),
        Case("clean-last-child", "Cleaning a parent's last pending child from wait deletes "
             "the parent with it.",
             (flow(node(P, node("c"))), CleanJobsInSet("wait", T)), ("hard-removal",),
             since=SINCE),
        Case("clean-nothing", "A clean that finds nothing answers [] and still writes "
             "`cleaned` with count 0.", (CleanJobsInSet("failed", NOW),), ("clean-finished",),
             since=SINCE),
    ]


def _obliterate_cases() -> list[Case]:
    everything = (*_done("a"), *_failed("b"), add("w"), add("p", priority=2),
                  add("d", delay=5000), _scheduler(start=T + 9000), add("x"), fetch(T + 20),
                  Pause())
    return [
        Case("obliterate-not-paused", "obliterate on a queue that is not paused: -1, nothing "
             "removed.", (add("a"), Obliterate()), ("obliterate",), since=SINCE),
        Case("obliterate-active", "Paused with an active job and no force: -2, nothing "
             "removed.", (add("a"), fetch(T + 10), Pause(), Obliterate()), ("obliterate",),
             since=SINCE),
        Case("obliterate-force", "force: every job, lock, scheduler and queue key goes; 0.",
             (*everything, Obliterate(force=True)), ("obliterate",), since=SINCE),
        Case("obliterate-count", "count 3 removes the active job and both delayed ones, "
             "then answers 1; the rest stays.",
             (*everything, Obliterate(count=3, force=True)), ("obliterate",), since=SINCE),
        Case("obliterate-leaves", "obliterate leaves a parent in waiting-children and the "
             "rate limiter's key.",
             (flow(node(P, node2("c"))), add("x"), Pause(), Obliterate()), ("obliterate-left",),
             given={"limiter": {"string": {"value": "1", "pttl": 60000}}}, since=SINCE,
             needs=("shared-slot",)),
    ]


def _to_wait_cases() -> list[Case]:
    return [
        Case("retry-failed", "retryJobs(failed): both LPUSHed to wait lowest score first, "
             "fields dropped, `waiting` events.",
             (*_failed("a", "b"), MoveJobsToWait("failed", 1000, NOW + 10)), ("to-wait",),
             since=SINCE),
        Case("retry-completed", "retryJobs(completed) drops returnvalue, not atm.",
             (*_done("a"), MoveJobsToWait("completed", 1000, NOW + 10)), ("to-wait",),
             since=SINCE),
        Case("retry-count", "count 1 of 2 failed moves the oldest and answers 1.",
             (*_failed("a", "b"), MoveJobsToWait("failed", 1, NOW + 10)), ("to-wait",),
             since=SINCE),
        Case("retry-timestamp", "Only failed jobs scored up to the timestamp move.",
             (*_failed("a", "b"), MoveJobsToWait("failed", 1000, NOW)), ("to-wait",),
             since=SINCE),
        Case("promote-all", "promoteJobs moves every delayed job to wait, a prioritized one "
             "too, keeping its delay field.",
             (add("a", delay=5000), add("b", delay=100, priority=2), MoveJobsToWait("delayed")),
             ("to-wait",), since=SINCE),
        Case("retry-paused", "While paused the retried jobs go to wait with no marker.",
             (*_failed("a"), Pause(), MoveJobsToWait("failed", 1000, NOW + 10)), ("to-wait",),
             since=SINCE),
        Case("retry-child", "A completed child retried in bulk is pending in its parent "
             "again; the parent stays in wait.",
             (flow(node(P, node("c"))), fetch(T + 10), complete("c"),
              MoveJobsToWait("completed", 1000, NOW + 10)), ("retry-child",), since=SINCE),
    ]


def _reprocess_cases() -> list[Case]:
    return [
        Case("reprocess-failed", "Job.retry(failed): LPUSHed behind the waiting job, a "
             "`waiting` event; failedReason dropped.",
             (*_failed("a"), add("b"), ReprocessJob("a", "failed")), ("reprocess",),
             since=SINCE),
        Case("reprocess-completed-lifo", "A lifo job is RPUSHed, taken before the waiting job; "
             "returnvalue dropped.",
             (*_done("a"), add("b"), ReprocessJob("a", "completed", lifo=True)),
             ("reprocess",), since=SINCE),
        Case("reprocess-reset-attempts", "resetAttemptsMade and resetAttemptsStarted drop atm "
             "and ats.",
             (*_failed("a"), ReprocessJob("a", "failed", reset_attempts_made=True,
                                          reset_attempts_started=True)),
             ("reprocess",), since=SINCE),
        Case("reprocess-wrong-state", "A completed job asked back from failed: -3, nothing "
             "written.", (*_done("a"), ReprocessJob("a", "failed")), ("reprocess",),
             since=SINCE),
        Case("reprocess-missing", "A job without its hash: -1.",
             (ReprocessJob("9", "failed"),), ("reprocess",), since=SINCE),
        Case("reprocess-prioritized", "A job with priority 2 goes back to prioritized with a "
             "fresh pc.",
             (add("p", priority=2), fetch(T + 10), complete("1"),
              ReprocessJob("1", "completed")), ("reprocess",), since=SINCE),
        Case("reprocess-child", "A completed child reprocessed is pending in its parent again.",
             (flow(node(P, node("c"))), fetch(T + 10), complete("c"),
              ReprocessJob("c", "completed")), ("retry-child",), since=SINCE),
        Case("reprocess-paused", "While paused the job goes to wait with no marker.",
             (*_failed("a"), Pause(), ReprocessJob("a", "failed")), ("reprocess",),
             since=SINCE),
    ]


def _other_cases() -> list[Case]:
    return [
        Case("save-stacktrace", "saveStacktrace writes both fields over the job's: 0.",
             (*_failed("a"), SaveStacktrace("a", '["Error: again"]', "again")),
             ("stacktrace",), since=SINCE),
        Case("save-stacktrace-missing", "saveStacktrace without the job: -1, nothing written.",
             (SaveStacktrace("9", "[]", "gone"),), ("stacktrace",), since=SINCE),
        Case("orphans", "Of 1 (in wait), 5 (a hash, logs, lock) and 7 (no keys): 5 and 7 are "
             "removed, 2.", (RemoveOrphanedJobs(("1", "5", "7")),), ("orphans",),
             given={"wait": wait_list("1"), **_seeded_job("1"), **_seeded_job("5"),
                    "5:logs": wait_list("row"), "5:lock": lock()}, since=SINCE),
        Case("orphans-held-anywhere", "Ids in a finished set, `stalled` or waiting-children "
             "are held: 0.", (RemoveOrphanedJobs(("c", "s", "w")),), ("orphans",),
             given={"completed": zset([("c", T)]), "stalled": {"set": ["s"]},
                    "waiting-children": zset([("w", T)]), **_seeded_job("c"),
                    **_seeded_job("s"), **_seeded_job("w")}, since=SINCE),
        Case("orphans-marker-member", "An orphaned job \"1\" while marker holds member \"1\" "
             "counts as held.",
             (add("d", delay=5000, job_id="d"), RemoveOrphanedJobs(("1", "9"))), ("orphans",),
             given={**_seeded_job("1"), **_seeded_job("9")}, since=SINCE),
    ]


AREA = Area(
    "maintenance",
    "What an admin action writes: drain, clean, obliterate, retry and promote in bulk, "
    "reprocess a finished job, save a stack trace, remove orphaned jobs.",
    NOTES,
    tuple([*_drain_cases(), *_clean_cases(), *_obliterate_cases(), *_to_wait_cases(),
           *_reprocess_cases(), *_other_cases()]),
    since=SINCE,
    rule=(
        "Each removes or moves jobs in bulk: removed jobs leave their parent (deleting it "
        "when it was waiting for them alone, in the same queue) and take their keys with them; "
        "moved jobs lose their finished fields and go to wait (or prioritized) with a "
        "`waiting` event."
    ),
)
