"""getters: what a client reads (getCounts, getCountsPerPriority, getState and getStateV2,
getRanges, getJobs, paginate, isFinished, isJobInList, isMaxed, getMetrics), from seeded state.

The state is seeded rather than built by ops, so that each fact holds wherever its script
is unchanged: getCounts, getRanges, getState, isFinished and isJobInList since 5.0.0 (their
effective text differs only in comments and truthiness clean-ups up to 6.5.4), the others
from the release that added them. getCounts' delayed cutoff came with 6.7.0.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, S, T, job_hash, wait_list, zset
from reference_impl.getter_ops import (
    GetCounts,
    GetCountsPerPriority,
    GetJob,
    GetJobLogs,
    GetJobs,
    GetMetrics,
    GetRanges,
    GetState,
    IsFinished,
    IsJobInList,
    IsMaxed,
    Paginate,
)
from reference_impl.getters import PRIORITY_BAND
from reference_impl.keys import QUEUE_REF

NOTES = {
    "counts": Flag(
        "key-layout",
        "getCounts answers one count per state name, in the order asked: LLEN of "
        "`<prefix><name>` for wait, paused and active, ZCARD for any other name (delayed, "
        "prioritized, completed, failed, waiting-children, or a name that is no state).",
    ),
    "counts-cutoff": Flag(
        "boundary",
        "From 6.7.0 a numeric first argument is a cutoff in ms: delayed then counts ZCOUNT -inf "
        "(cutoff * 0x1000 - 1), the jobs due before it; the names start at the second argument.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.7.0",),
    ),
    "legacy-marker": Flag(
        "older-protocol",
        "getCounts and getRanges RPOP a 5.x marker (`0:<ms>`, the last item of wait or paused) "
        "when the list holds jobs too, so it is neither counted nor listed; a marker alone "
        "stays, and counts 0 and lists nothing. A marker elsewhere in the list is a job to them.",
    ),
    "per-priority": Flag(
        "score",
        "getCountsPerPriority answers, per priority asked, wait's length for 0 and for p the "
        "prioritized jobs scored in [p * 2^32, (p + 1) * 2^32 - 1]; 6.0.0 up to 6.1.1 passed "
        "wait, paused, meta and prioritized as KEYS (getCountsPerPriority-4), reading only "
        "wait and prioritized.",
    ),
    "state": Flag(
        "key-layout",
        "getStateV2 (LPOS) and getState (LRANGE, for Redis before 6.0.6) name the first key "
        "holding the job, in the order completed, failed, delayed, prioritized, active, wait "
        "and paused (both `waiting`), waiting-children; else `unknown`.",
    ),
    "ranges": Flag(
        "boundary",
        "getRanges answers one id list per state name: sorted sets by rank (ZRANGE start end, "
        "ZREVRANGE when not asc); lists as stored (LRANGE start end) when not asc, and when asc "
        "LRANGE -(end+1) -(start+1), an index of -1 read as 0, in list order.",
    ),
    "finished": Flag(
        "key-layout",
        "isFinished answers 1 in completed, 2 in failed, 0 in neither, -1 without the job hash; "
        "asked for the value, [1, returnvalue], [2, failedReason] or [0].",
    ),
    "in-list": Flag(
        "key-layout",
        "isJobInList answers 1 when the list named by KEYS[1] holds the id, else nil.",
    ),
    "maxed": Flag(
        "pause",
        "isMaxed answers 1 when meta concurrency is set and LLEN active reaches it, else nil "
        "(also without a concurrency).",
    ),
    "jobs": Flag(
        "key-layout",
        "getJobs answers, per state name, [id, HGETALL of `<prefix><id>`] for the ids getRanges "
        "would read, skipping an id without a hash; an ascending list read is reversed by the "
        "script (the oldest job first), and a window past an ascending list's end is empty.",
    ),
    "jobs-backfill": Flag(
        "boundary",
        "For a window with start and end >= 0, getJobs reads on past skipped ids, a window's "
        "worth at a time, until the window is full, the key ends, or 5 reads (the Node client's "
        "bound, ARGV[4]); a negative start or end is read once, as is.",
    ),
    "paginate": Flag(
        "flow",
        "paginate (a parent's dependencies set or processed hash) answers [cursor, offset, "
        "items, count, jobs]: the items whose running offset (from ARGV[4]) is in [start, start "
        "+ end - start + 1), end -1 meaning the count; a hash's as [field, value]; with ARGV[6] "
        "each item's hash (its full key); a missing key [0, 0, [], 0].",
    ),
    "plain-reads": Flag(
        "key-layout",
        "A client reads a job with HGETALL `<prefix><id>` (no hash: no job) and its logs from "
        "`<id>:logs` (addLog RPUSHes them): ascending LRANGE start end, descending LRANGE "
        "-(end+1) -(start+1) reversed, with the LLEN as the count. No script: adapters only.",
    ),
    "metrics": Flag(
        "key-layout",
        "getMetrics answers [[count, prevTS, prevCount] of metrics:<type>, LRANGE start end of "
        "metrics:<type>:data, LLEN of it]; a missing field is nil.",
    ),
}

#: The first releases with a script or an argument the vectors call.
COUNTS_PER_PRIORITY_SINCE = versions.PRIORITY_COUNTS
GET_JOBS_SINCE = versions.GET_JOBS_SCRIPT
#: The plain reads are checked on the Node client's adapter, at 6.0.0 and the newest release.
PLAIN_SINCE = versions.WORKER_SINCE
MAXED_SINCE = versions.GLOBAL_CONCURRENCY
METRICS_SINCE = versions.METRICS_SCRIPT
CUTOFF_SINCE = versions.COUNTS_CUTOFF

LEGACY = f"0:{T}"
EVERY_STATE = ("wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
               "waiting-children")


def _ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{n}" for n in range(1, count + 1)]


def _each_state() -> dict[str, Any]:
    """1 to 8 jobs per state, each count its own: a key read for another shows."""
    given: dict[str, Any] = {}
    for count, state in enumerate(EVERY_STATE, start=1):
        ids = _ids(state[0] + state[-1], count)
        if state in ("wait", "paused", "active"):
            given[state] = wait_list(*ids)
        elif state == "delayed":
            given[state] = zset([(job, (T + 1000 * n) * S) for n, job in enumerate(ids, 1)])
        elif state == "prioritized":
            given[state] = zset([(job, 2 * PRIORITY_BAND + n) for n, job in enumerate(ids, 1)])
        else:
            given[state] = zset([(job, T + n) for n, job in enumerate(ids, 1)])
    return given


def _one(state: str, job: str = "j") -> dict[str, Any]:
    """`job` held by `state` alone."""
    if state in ("wait", "paused", "active"):
        return {state: wait_list("x", job, "y")}
    return {state: zset([("x", T), (job, T + 1), ("y", T + 2)])}


FIVE = ("e", "d", "c", "b", "a")  # a list as stored: the newest job at the head


def _count_cases() -> list[Case]:
    due = {"delayed": zset([("early", (T + 1999) * S + 0xFFF), ("at", (T + 2000) * S),
                            ("late", (T + 2000) * S + 1)])}
    return [
        Case("counts-each-state", "getCounts of the eight state names answers 1..8: each "
             "name reads its own key.", (GetCounts(EVERY_STATE),), ("counts",),
             given=_each_state()),
        Case("counts-asked-order", "Names come back in the order asked, a repeated name "
             "counted each time.", (GetCounts(("failed", "wait", "failed")),), ("counts",),
             given={"failed": zset([("f1", T), ("f2", T)]), "wait": wait_list("w1")}),
        Case("counts-other-name", "A name that is no state is ZCARDed: `repeat` counts the "
             "job schedulers, `gone` 0.", (GetCounts(("repeat", "gone")),), ("counts",),
             given={"repeat": zset([("daily", T), ("hourly", T + 1)])}),
        Case("counts-delayed-whole", "Without a cutoff delayed counts every delayed job, due "
             "or not.", (GetCounts(("delayed",)),), ("counts",), given=due),
        Case("counts-cutoff", "A cutoff of T+2000 counts the job due at T+1999 only, not one "
             "at T+2000 exactly.", (GetCounts(("delayed",), cutoff=T + 2000),),
             ("counts-cutoff",), given=due, since=CUTOFF_SINCE),
        Case("counts-cutoff-other-names", "With a cutoff the names start at ARGV[2]; wait and "
             "completed count as before.", (GetCounts(("wait", "delayed", "completed"),
                                                     cutoff=T + 2000),),
             ("counts-cutoff",), given={**due, "wait": wait_list("w1", "w2"),
                                        "completed": zset([("c1", T)])},
             since=CUTOFF_SINCE),
        Case("counts-legacy-marker", "A 5.x marker at wait's tail is popped and not "
             "counted: 2, and wait keeps its jobs.", (GetCounts(("wait",)),),
             ("legacy-marker",), given={"wait": wait_list("2", "1", LEGACY)}),
        Case("counts-legacy-marker-alone", "A 5.x marker alone in wait counts 0 and stays.",
             (GetCounts(("wait",)),), ("legacy-marker",), given={"wait": wait_list(LEGACY)}),
        Case("counts-legacy-marker-paused", "A 5.x marker at the tail of a paused list is "
             "popped too.", (GetCounts(("paused",)),), ("legacy-marker",),
             given={"paused": wait_list("1", LEGACY)}),
        Case("counts-marker-not-at-tail", "A marker at the head is not at the tail: LLEN "
             "counts it, and nothing is deleted.", (GetCounts(("wait",)),), ("legacy-marker",),
             given={"wait": wait_list(LEGACY, "1")}),
        Case("counts-active-marker", "Only wait and paused are cleaned: active ending in a "
             "marker counts it.", (GetCounts(("active",)),), ("legacy-marker",),
             given={"active": wait_list("1", LEGACY)}),
    ]


def _priority_cases() -> list[Case]:
    band = PRIORITY_BAND
    return [
        Case("per-priority", "Priorities 0..3: wait's 2 jobs for 0, then each band's "
             "prioritized jobs (1, 0, 2).", (GetCountsPerPriority((0, 1, 2, 3)),),
             ("per-priority",),
             given={"wait": wait_list("w2", "w1"),
                    "prioritized": zset([("p1", band + 1), ("q1", 3 * band + 2),
                                         ("q2", 3 * band + 3)])},
             since=COUNTS_PER_PRIORITY_SINCE),
        Case("per-priority-band-edges", "Scores p * 2^32 and (p+1) * 2^32 - 1 are priority "
             "p; (p+1) * 2^32 is the next.", (GetCountsPerPriority((1, 2)),), ("per-priority",),
             given={"prioritized": zset([("low", band), ("high", 2 * band - 1),
                                         ("next", 2 * band)])},
             since=COUNTS_PER_PRIORITY_SINCE),
        Case("per-priority-paused-list", "Priority 0 reads wait only: a legacy paused "
             "list's jobs are not counted.", (GetCountsPerPriority((0,)),), ("per-priority",),
             given={"wait": wait_list("w1"), "paused": wait_list("p2", "p1")},
             since=COUNTS_PER_PRIORITY_SINCE),
    ]


def _state_cases() -> list[Case]:
    named = [("completed", "completed"), ("failed", "failed"), ("delayed", "delayed"),
             ("prioritized", "prioritized"), ("active", "active"), ("wait", "waiting"),
             ("paused", "waiting in a legacy paused list"),
             ("waiting-children", "waiting-children")]
    cases = [Case(f"state-{key}", f"getStateV2 of a job in {key} alone answers "
                  f"{answer}.", (GetState("j"),), ("state",), given=_one(key))
             for key, answer in named]
    order = {"completed": zset([("cf", T)]), "failed": zset([("cf", T)]),
             "delayed": zset([("da", T * S)]), "active": wait_list("da"),
             "wait": wait_list("wc"), "waiting-children": zset([("wc", T)])}
    legacy_lists = {"active": wait_list("a"), "wait": wait_list("w"), "paused": wait_list("p")}
    legacy_sets = {"completed": zset([("c", T)]), "failed": zset([("f", T)]),
                   "delayed": zset([("d", T * S)]), "prioritized": zset([("p", PRIORITY_BAND)]),
                   "waiting-children": zset([("wc", T)])}
    return [
        *cases,
        Case("state-unknown", "getStateV2 of a job in no state key answers unknown, even with "
             "its hash.", (GetState("j"),), ("state",), given={"j": job_hash({"name": "x"})}),
        Case("state-order", "A job in two keys: completed over failed, delayed over active, "
             "waiting over waiting-children.",
             (GetState("cf"), GetState("da"), GetState("wc")), ("state",), given=order),
        Case("state-legacy-lists", "getState (LRANGE, Redis < 6.0.6) finds active, wait and "
             "paused jobs as getStateV2 does.",
             (GetState("a", legacy=True), GetState("w", legacy=True),
              GetState("p", legacy=True)), ("state",), given=legacy_lists),
        Case("state-legacy-sets", "getState names the sorted-set states and unknown as "
             "getStateV2 does.",
             (*(GetState(job, legacy=True) for job in ("c", "f", "d", "p", "wc")),
              GetState("none", legacy=True)), ("state",), given=legacy_sets),
    ]


def _range_cases() -> list[Case]:
    ranked = {"completed": zset([(job, T + n) for n, job in enumerate(("a", "b", "c", "d",
                                                                       "e"))])}
    stored = {"wait": wait_list(*FIVE)}
    return [
        Case("ranges-set-asc", "A sorted set asc reads ranks 1..2 from the lowest score: b, c.",
             (GetRanges(("completed",), 1, 2, asc=True),), ("ranges",), given=ranked),
        Case("ranges-set-desc", "A sorted set desc reads ranks 1..2 from the highest score: "
             "d, c.", (GetRanges(("completed",), 1, 2),), ("ranges",), given=ranked),
        Case("ranges-list-desc", "A list desc is LRANGE 1 2 as stored (newest at the head): "
             "d, c.", (GetRanges(("wait",), 1, 2),), ("ranges",), given=stored),
        Case("ranges-list-asc", "A list asc 1..2 is LRANGE -3 -2, in list order: c, b.",
             (GetRanges(("wait",), 1, 2, asc=True),), ("ranges",), given=stored),
        Case("ranges-list-asc-to-end", "A list asc 1..-1 reads end -1 as index 0: LRANGE 0 -2 "
             "is e, d, c, b.", (GetRanges(("wait",), 1, -1, asc=True),), ("ranges",),
             given=stored),
        Case("ranges-past-the-end", "Ranks past the last answer an empty list, for a set and "
             "for a list.", (GetRanges(("completed", "wait"), 7, 9),), ("ranges",),
             given={**ranked, **stored}),
        Case("ranges-several-names", "One list per name, in the order asked; a missing key "
             "gives an empty one.", (GetRanges(("active", "failed", "completed")),),
             ("ranges",), given={**ranked, "active": wait_list("x", "y")}),
        Case("ranges-legacy-marker", "A 5.x marker at wait's tail is popped before the range "
             "is read.", (GetRanges(("wait",)),), ("legacy-marker",),
             given={"wait": wait_list("2", "1", LEGACY)}),
        Case("ranges-legacy-marker-alone", "A 5.x marker alone in wait lists nothing and stays.",
             (GetRanges(("wait",)),), ("legacy-marker",), given={"wait": wait_list(LEGACY)}),
    ]


def _hashes(*ids: str) -> dict[str, Any]:
    """A job hash for each id: its name is its id, so a hash read for another id shows."""
    return {job: job_hash({"name": f"n-{job}", "data": f'{{"id":"{job}"}}'}) for job in ids}


def _jobs_cases() -> list[Case]:
    ranked = {"completed": zset([(job, T + n) for n, job in enumerate(("a", "b", "c", "d",
                                                                       "e"))]),
              **_hashes("a", "b", "c", "d", "e")}
    stored = {"wait": wait_list(*FIVE), **_hashes(*FIVE)}
    gaps = {"wait": wait_list("e", "d", "c", "b", "a"), **_hashes("e", "c", "a")}
    missing = [f"m{n}" for n in range(1, 6)]
    bound = {"wait": wait_list(*missing, "j"), "completed": zset(
        [(job, T + n) for n, job in enumerate([*missing[:4], "k"])]), **_hashes("j", "k")}
    return [
        Case("jobs-list-desc", "getJobs of wait 1..2 desc: d and c with their hashes, as "
             "stored.", (GetJobs(("wait",), 1, 2),), ("jobs",), given=stored,
             since=GET_JOBS_SINCE),
        Case("jobs-list-asc-reversed", "getJobs of wait 1..2 asc reads LRANGE -3 -2 and "
             "reverses it: b, then c.", (GetJobs(("wait",), 1, 2, asc=True),), ("jobs",),
             given=stored, since=GET_JOBS_SINCE),
        Case("jobs-set-both-orders", "A sorted set by rank: 1..2 asc is b, c; desc is d, c.",
             (GetJobs(("completed",), 1, 2, asc=True), GetJobs(("completed",), 1, 2)),
             ("jobs",), given=ranked, since=GET_JOBS_SINCE),
        Case("jobs-skip-missing-hash", "Ids without a hash are skipped: wait e..a with hashes "
             "for e, c, a answers those three.", (GetJobs(("wait",)),), ("jobs",), given=gaps,
             since=GET_JOBS_SINCE),
        Case("jobs-asc-past-the-end", "An ascending window past a list's end (LRANGE -10 -8 of "
             "five) answers no jobs.", (GetJobs(("wait",), 7, 9, asc=True),), ("jobs",),
             given=stored, since=GET_JOBS_SINCE),
        Case("jobs-several-types", "One list per name in the order asked, a name repeated "
             "answered twice, a missing key empty.",
             (GetJobs(("completed", "active", "completed"), 0, 0),), ("jobs",), given=ranked,
             since=GET_JOBS_SINCE),
        Case("jobs-legacy-marker", "A 5.x marker at wait's tail is popped, and the jobs before "
             "it listed.", (GetJobs(("wait",)),), ("jobs", "legacy-marker"),
             given={"wait": wait_list("2", "1", LEGACY), **_hashes("1", "2")},
             since=GET_JOBS_SINCE),
        Case("jobs-backfill", "wait 0..1 desc with d and b hashless: reads on to e, c and "
             "answers those two.", (GetJobs(("wait",), 0, 1),), ("jobs-backfill",),
             given={"wait": wait_list("d", "e", "b", "c", "a"), **_hashes("e", "c", "a")},
             since=GET_JOBS_SINCE),
        Case("jobs-backfill-five-reads", "Window 0..0: a job after 5 hashless ids is not "
             "reached (5 reads), after 4 it is.",
             (GetJobs(("wait",), 0, 0), GetJobs(("completed",), 0, 0, asc=True)),
             ("jobs-backfill",), given=bound, since=GET_JOBS_SINCE),
        Case("jobs-negative-no-backfill", "A negative window is read once: completed -2..-1 "
             "asc with d hashless answers e only.", (GetJobs(("completed",), -2, -1, asc=True),),
             ("jobs-backfill",),
             given={k: v for k, v in ranked.items() if k != "d"}, since=GET_JOBS_SINCE),
    ]


P = "p"  # the parent whose dependencies are paginated


def _children(*ids: str) -> dict[str, Any]:
    return {f"{P}:dependencies": {"set": sorted(f"{QUEUE_REF}:{c}" for c in ids)}}


def _processed(*ids: str) -> dict[str, Any]:
    return {f"{P}:processed": job_hash({f"{QUEUE_REF}:{c}": f'{{"v":"{c}"}}' for c in ids})}


def _paginate_cases() -> list[Case]:
    deps, done = f"{P}:dependencies", f"{P}:processed"
    return [
        Case("paginate-set-whole", "The whole dependencies set: cursor 0, offset 3, the three "
             "child keys, count 3, no jobs.", (Paginate(deps),), ("paginate",),
             given=_children("c1", "c2", "c3")),
        Case("paginate-set-jobs", "With fetch jobs each child key's hash comes too; a child "
             "without one gives an empty hash.", (Paginate(deps, fetch_jobs=True),),
             ("paginate",), given={**_children("c1", "c2"), **_hashes("c1")}),
        Case("paginate-hash-page", "processed 1..2: the second and third [key, value] pairs in "
             "field order, offset 3, count 4.", (Paginate(done, 1, 2, fetch_jobs=True),),
             ("paginate",), given=_processed("c1", "c2", "c3", "c4")),
        Case("paginate-hash-to-end", "processed 1..-1 reads to the last pair: three of four, "
             "offset 4.", (Paginate(done, 1, -1, fetch_jobs=True),), ("paginate",),
             given=_processed("c1", "c2", "c3", "c4")),
        Case("paginate-offset", "Offset 2 from an earlier call: the scan's items count from 2, "
             "so 3..4 takes the 2nd and 3rd.", (Paginate(done, 3, 4, offset=2),), ("paginate",),
             given=_processed("c1", "c2", "c3")),
        Case("paginate-before-page", "A page past the items: none, offset the count.",
             (Paginate(deps, 5, 6, fetch_jobs=True),), ("paginate",),
             given=_children("c1", "c2")),
        Case("paginate-hash-jobs", "processed with fetch jobs: each field (a child key) read "
             "as a job hash.", (Paginate(done, fetch_jobs=True),), ("paginate",),
             given={**_processed("c1", "c2"), **_hashes("c1", "c2")}),
        Case("paginate-missing", "A missing key answers [0, 0, [], 0].",
             (Paginate(deps, fetch_jobs=True),), ("paginate",)),
    ]


def _plain_cases() -> list[Case]:
    logs = {"j": job_hash({"name": "x"}), "j:logs": wait_list("l0", "l1", "l2", "l3", "l4")}
    return [
        Case("job-by-id", "getJob answers the job's hash fields, and no job for an id without "
             "a hash.", (GetJob("j"), GetJob("gone")), ("plain-reads",),
             given={"j": job_hash({"name": "report", "data": '{"n":1}', "timestamp": str(T)})},
             since=PLAIN_SINCE),
        Case("job-logs-asc", "getJobLogs 1..2 ascending is LRANGE 1 2: l1, l2, and the count 5.",
             (GetJobLogs("j", 1, 2),), ("plain-reads",), given=logs, since=PLAIN_SINCE),
        Case("job-logs-desc", "getJobLogs 0..1 descending is LRANGE -2 -1 reversed: l4, l3; "
             "count 5.", (GetJobLogs("j", 0, 1, asc=False),), ("plain-reads",), given=logs,
             since=PLAIN_SINCE),
        Case("job-logs-none", "A job without logs: no rows and count 0.", (GetJobLogs("j"),),
             ("plain-reads",), given={"j": job_hash({"name": "x"})}, since=PLAIN_SINCE),
    ]


def _finished(state: str, field: str, value: str) -> dict[str, Any]:
    return {state: zset([("j", T)]), "j": job_hash({"name": "x", field: value})}


def _finished_cases() -> list[Case]:
    done = _finished("completed", "returnvalue", '{"sent":true}')
    failed = _finished("failed", "failedReason", "boom")
    return [
        Case("finished-completed", "A completed job: 1, and with the value [1, returnvalue].",
             (IsFinished("j"), IsFinished("j", return_value=True)), ("finished",), given=done),
        Case("finished-failed", "A failed job: 2, and with the value [2, failedReason].",
             (IsFinished("j"), IsFinished("j", return_value=True)), ("finished",), given=failed),
        Case("finished-neither", "A job in wait: 0, and with the value [0].",
             (IsFinished("j"), IsFinished("j", return_value=True)), ("finished",),
             given={"wait": wait_list("j"), "j": job_hash({"name": "x"})}),
        Case("finished-no-hash", "An id in completed without its hash: -1.",
             (IsFinished("j"),), ("finished",), given={"completed": zset([("j", T)])}),
        Case("finished-completed-over-failed", "A job in completed and failed is completed: 1.",
             (IsFinished("j"),), ("finished",),
             given={**done, "failed": zset([("j", T)])}),
    ]


def _other_cases() -> list[Case]:
    metrics = {
        "metrics:completed": job_hash({"count": "9", "prevTS": str(T), "prevCount": "7"}),
        "metrics:completed:data": wait_list("2", "0", "5"),
        "metrics:failed": job_hash({"count": "3", "prevTS": str(T + 60000), "prevCount": "1"}),
        "metrics:failed:data": wait_list("1", "1"),
    }
    return [
        Case("in-list", "isJobInList: 1 for an id in wait, nil for one that is not, nil for "
             "an empty active.",
             (IsJobInList("wait", "2"), IsJobInList("wait", "9"), IsJobInList("active", "2")),
             ("in-list",), given={"wait": wait_list("3", "2", "1")}),
        Case("maxed-at-concurrency", "isMaxed with concurrency 2 and 2 active jobs: 1.",
             (IsMaxed(),), ("maxed",),
             given={"meta": job_hash({"concurrency": "2"}), "active": wait_list("2", "1")},
             since=MAXED_SINCE),
        Case("maxed-below-concurrency", "isMaxed with concurrency 2 and 1 active job: nil.",
             (IsMaxed(),), ("maxed",),
             given={"meta": job_hash({"concurrency": "2"}), "active": wait_list("1")},
             since=MAXED_SINCE),
        Case("maxed-no-concurrency", "isMaxed without a concurrency: nil, however many are "
             "active.", (IsMaxed(),), ("maxed",),
             given={"active": wait_list("3", "2", "1")}, since=MAXED_SINCE),
        Case("metrics-range", "getMetrics completed 0..1: the hash's three fields, two of the "
             "three points, and 3.", (GetMetrics("completed", 0, 1),), ("metrics",),
             given=metrics, since=METRICS_SINCE),
        Case("metrics-type", "getMetrics failed reads metrics:failed and its points.",
             (GetMetrics("failed"),), ("metrics",), given=metrics, since=METRICS_SINCE),
        Case("metrics-none", "getMetrics with no metrics kept: three nils, no points, 0.",
             (GetMetrics("completed"),), ("metrics",), since=METRICS_SINCE),
    ]


AREA = Area(
    "getters",
    "What a client reads: counts per state and per priority, a job's state, ids by state, "
    "jobs by state with their hashes, a page of a parent's children, whether a job "
    "finished, the concurrency, metrics, and a job and its logs as a client reads them.",
    NOTES,
    tuple([*_count_cases(), *_priority_cases(), *_state_cases(), *_range_cases(),
           *_jobs_cases(), *_paginate_cases(), *_plain_cases(), *_finished_cases(),
           *_other_cases()]),
    rule=(
        "Each getter reads the keys its state names give (`<prefix><name>`), in the order "
        "asked; lists by LLEN or LRANGE, sorted sets by ZCARD, ZCOUNT or rank. They write "
        "nothing, but for the RPOP of a 5.x marker left at the tail of wait or paused."
    ),
)
