"""job-schedulers: Queue.upsertJobScheduler (addJobScheduler-11), a worker's next iteration
(updateJobScheduler-12, and the client's side of it: `scheduler_pickups`), removeJobScheduler-3
and getJobScheduler-1.

A scheduler is a member of the `repeat` zset scored by its next fire time, and a hash
`repeat:<id>`; its iteration is a job `repeat:<id>:<fire time>` with `rjk = <id>`. An `every`
scheduler's fire times are computed by the scripts; a `pattern`'s by the client's cron library
(`nextMillis` here), which the cron-parity area will judge.

The scripts are the same from 6.0.0 to 6.7.0 (5.81.5 put an iteration of a paused queue in the
legacy `paused` list and checked the producer key): the area is claimed from 6.0.0.
"""

from __future__ import annotations

from typing import Any

from reference_impl import versions
from reference_impl.cases import Area, Case, Flag, T, job_hash, wait_list, zset
from reference_impl.cases.scheduler_pickups import NOTES as PICK_UP_NOTES
from reference_impl.cases.scheduler_pickups import pick_up_cases
from reference_impl.cases.scheduler_upserts import NOTES as UPSERT_NOTES
from reference_impl.cases.scheduler_upserts import upsert_cases
from reference_impl.scheduler_ops import (
    AddJobScheduler,
    GetJobScheduler,
    RemoveJobScheduler,
    UpdateJobScheduler,
)

#: A clock 123 ms past a whole second: an `every: 1000` scheduler's offset, when none is given.
NOW = T + 123
#: The iteration opts a minimal client merges for `every: 1000`.
EVERY = {"repeat": {"every": 1000}}
PATTERN = "0 * * * * *"

NOTES = {
    "every-first": Flag(
        "score",
        "An every scheduler's first iteration fires at its start date (now if that is past); "
        "else, with an offset, at the first k*every + offset after now; else now. A missing "
        "or 0 offset is then stored as where the fire time falls in its interval.",
    ),
    "every-next": Flag(
        "score",
        "The next iteration of an every scheduler fires every ms after the current one; when "
        "that is past, at now's slot plus the offset, or the slot after when that is not "
        "ahead of now.",
    ),
    "iteration": Flag(
        "placement",
        "The iteration is job repeat:<id>:<fire time> with rjk <id> and opts with delay and "
        "jobId, enqueued as an add: delayed (delay = fire time - now) or, when due, "
        "prioritized or pushed to wait (LPUSH; RPUSH with lifo), with its marker, added and "
        "delayed or waiting events. id is INCRed once per iteration.",
    ),
    "hash": Flag(
        "key-layout",
        "repeat:<id> holds name, the options given (tz, limit, pattern, startDate, endDate, "
        "every), offset, opts (the template job opts as JSON, unless empty), data (unless "
        "{}) and ic; the repeat zset scores the id with the next fire time.",
    ),
    "pattern": Flag(
        "score",
        "A pattern scheduler fires at the client's nextMillis (the script computes nothing), "
        "and stores offset 0.",
    ),
    "upsert": Flag(
        "missing-write",
        "An upsert rewrites the hash (ic kept, offset kept unless given) and removes the "
        "current iteration when it is delayed, prioritized or in wait (with its keys and its "
        "deduplication key, no event); an every replacement keeps the old fire time unless "
        "every changed. An iteration that started (active) stays, and the next one is added.",
    ),
    "paused": Flag(
        "pause",
        "While the queue is paused the upsert looks for a waiting iteration in the legacy "
        "paused list, which 6.x never fills: the waiting one stays. An iteration due now gets "
        "no base marker.",
    ),
    "collision": Flag(
        "precondition",
        "An iteration id held by another job: a pattern upsert returns -10 and writes nothing "
        "but the events cap; an every upsert walks on by every, up to 32 slots, then returns "
        "-11. A pattern upsert that replaced its iteration writes over a job holding the "
        "new id (HMSET: the other fields stay).",
    ),
    "producer": Flag(
        "precondition",
        "updateJobScheduler adds the next iteration (ZADD repeat, HINCRBY ic, INCR id) only "
        "when the producer is the current iteration; when the next iteration exists it emits "
        "duplicated instead; without the scheduler, or with another producer, it writes "
        "nothing and returns nil.",
    ),
    "remove": Flag(
        "missing-write",
        "removeJobScheduler deletes the scheduler (0; 1 when missing) and its iteration only "
        "while delayed, with its keys and removed prev delayed; a waiting iteration stays.",
    ),
    "get": Flag(
        "key-layout",
        "getJobScheduler returns the scheduler's hash and next fire time, or nothing.",
    ),
    "dedup": Flag(
        "deduplication",
        "An iteration with opts.de stores deid but is never deduplicated, whoever holds "
        "de:<id>.",
    ),
    "unenforced": Flag(
        "precondition",
        "The scripts enforce neither endDate nor limit: an upsert past its endDate, or of a "
        "scheduler whose ic reached its limit, stores it and adds an iteration (ic unchanged). "
        "Only the client stops (Queue.upsertJobScheduler throws; a worker asks for nothing).",
    ),
    "switch": Flag(
        "missing-write",
        "Switching an every scheduler to a pattern rewrites the hash without every, but keeps "
        "the stored offset (the upsert that replaced an iteration sends none), and moves the "
        "iteration to the pattern's fire time.",
    ),
    **PICK_UP_NOTES,
    **UPSERT_NOTES,
}


def every(now: int = NOW, *, scheduler_id: str = "s", name: str = "report", period: int = 1000,
          **options: Any) -> AddJobScheduler:
    """An upsert of an every scheduler with minimal iteration opts."""
    job_opts = options.pop("job_opts", {"repeat": {"every": period}})
    return AddJobScheduler(scheduler_id, now, name, every=period, job_opts=job_opts, **options)


def pattern(next_millis: int, now: int = NOW, **options: Any) -> AddJobScheduler:
    """An upsert of a pattern scheduler whose client computed `next_millis`."""
    job_opts = options.pop("job_opts", {"repeat": {"pattern": PATTERN}})
    return AddJobScheduler("p", now, "report", pattern=PATTERN, next_millis=next_millis,
                           job_opts=job_opts, **options)


def nxt(now: int, producer: str, next_millis: int = 0, scheduler_id: str = "s",
        job_opts: dict[str, Any] | None = None) -> UpdateJobScheduler:
    """A worker's next iteration of `scheduler_id`, picked up from `producer`."""
    return UpdateJobScheduler(scheduler_id, now, next_millis, producer,
                              EVERY if job_opts is None else job_opts)


def _iteration(fire: int, scheduler_id: str = "s") -> str:
    return f"repeat:{scheduler_id}:{fire}"


PAUSED = {"meta": {"hash": {"paused": "1", "opts.maxLenEvents": "10000"}}}


def _first_cases() -> list[Case]:
    return [
        Case("every-now", "An every scheduler without offset or start date fires now, with "
             "offset 123: now's ms.", (every(),), ("every-first", "hash")),
        Case("every-aligned-now", "Upserted on a whole second, an every scheduler stores "
             "offset 0.", (every(T),), ("every-first", "hash")),
        Case("every-offset-ahead", "An offset ahead of now's ms fires in this second "
             "(offset 400 at 123: delay 277).", (every(offset=400),), ("every-first",)),
        Case("every-offset-now", "An offset equal to now's ms fires a whole interval later "
             "(offset 123 at 123: delay 1000).", (every(offset=123),), ("every-first",)),
        Case("every-offset-behind", "An offset behind now's ms fires in the next second "
             "(offset 100 at 123: delay 977).", (every(offset=100),), ("every-first",)),
        Case("every-offset-from-job-opts", "Without a scheduler offset, the iteration opts' "
             "repeat.offset is used.", (every(job_opts={"repeat": {"every": 1000,
                                                                   "offset": 250}}),),
             ("every-first",)),
        Case("every-start-ahead", "A start date ahead is the first fire time (its ms into "
             "the second becomes the offset).", (every(start_date=NOW + 5000),),
             ("every-first", "hash")),
        Case("every-start-past", "A start date already past fires now.",
             (every(start_date=NOW - 5000),), ("every-first", "hash")),
        Case("every-long-interval", "An hourly every scheduler fires now; its offset is "
             "now's ms into the hour.", (every(period=3_600_000),), ("every-first",)),
        Case("pattern-delayed", "A pattern iteration fires at the client's nextMillis, "
             "delayed; the hash stores offset 0.",
             (pattern(T + 60_000, tz="Europe/Paris"),), ("pattern", "hash", "iteration")),
        Case("pattern-due-now", "A pattern iteration due now goes to wait with the base "
             "marker.", (pattern(NOW),), ("pattern", "iteration")),
        Case("hash-options", "limit, endDate, the template data and opts are stored in the "
             "scheduler hash.", (every(limit=5, end_date=T + 3_600_000, data={"a": 1},
                                       template_opts={"attempts": 3}),), ("hash",)),
        Case("iteration-prioritized", "A due iteration with a priority goes to prioritized "
             "(the priority counter INCRed).",
             (every(job_opts={**EVERY, "priority": 5}),), ("iteration",)),
        Case("iteration-lifo", "A due lifo iteration is RPUSHed, behind a job already "
             "waiting.", (every(job_opts={**EVERY, "lifo": True}),), ("iteration",),
             {"wait": wait_list("1"), "1": job_hash({"name": "a", "timestamp": str(T)})}),
        Case("iteration-deduplication-ignored", "An iteration with opts.de stores deid even "
             "while another job holds de:d1.",
             (every(start_date=NOW + 100, job_opts={**EVERY, "de": {"id": "d1"}}),),
             ("dedup",), {"de:d1": {"string": "other"}}),
        Case("paused-no-marker", "A due iteration of a paused queue waits without a base "
             "marker.", (every(),), ("paused", "iteration"), PAUSED),
    ]


def _upsert_cases() -> list[Case]:
    delayed = every(start_date=NOW + 5000)
    return [
        Case("upsert-delayed-same-time", "An upsert with the same every replaces the delayed "
             "iteration at its fire time; id INCRs twice.",
             (delayed, every(NOW + 10, name="renamed")), ("upsert",)),
        Case("upsert-every-changed", "Upserting with another every recomputes the first "
             "fire time from now.", (delayed, every(NOW + 10, period=2000)), ("upsert",)),
        Case("upsert-waiting", "Upserting replaces an iteration in wait: the same id is "
             "added again, due.", (every(), every(NOW + 1)), ("upsert",)),
        Case("upsert-prioritized", "Upserting replaces a prioritized iteration.",
             (every(job_opts={**EVERY, "priority": 5}),
              every(NOW + 1, job_opts={**EVERY, "priority": 5})), ("upsert",)),
        Case("upsert-active-stays", "An iteration already active stays; the upsert adds the "
             "next one, every ms later.", (every(),), ("upsert",),
             {"repeat": zset([("s", NOW)]), _iteration(NOW): job_hash({"name": "report",
                                                                       "rjk": "s"}),
              "active": wait_list(_iteration(NOW)),
              "repeat:s": job_hash({"name": "report", "every": "1000", "offset": "123",
                                    "ic": "4"})}),
        Case("upsert-keeps-offset-and-count", "An upsert without offset keeps the stored "
             "offset (300), and ic.", (every(offset=300), nxt(NOW + 200, _iteration(T + 300)),
                                       every(NOW + 250), GetJobScheduler("s")),
             ("upsert", "get")),
        Case("upsert-removes-dedup-key", "Replacing an iteration that owns de:d1 deletes "
             "de:d1 and dn:d1.",
             (every(start_date=NOW + 100, job_opts={**EVERY, "de": {"id": "d1"}}),
              every(NOW + 1)), ("upsert", "dedup"),
             {"de:d1": {"string": _iteration(NOW + 100)}, "dn:d1": job_hash({"k": "v"})}),
        Case("upsert-paused-waiting-stays", "While paused, the waiting iteration stays and "
             "the upsert adds the next one.", (every(), every(NOW + 1)),
             ("paused", "upsert"), PAUSED),
        Case("pattern-upsert-moved", "A pattern upsert replaces the delayed iteration with "
             "one at the new nextMillis.", (pattern(T + 60_000), pattern(T + 120_000, NOW + 1)),
             ("pattern", "upsert")),
    ]


def _collision_cases() -> list[Case]:
    taken = {_iteration(NOW + 1000 * k): job_hash({"name": "old"}) for k in range(3)}
    full = {_iteration(NOW + 1000 * k): job_hash({"name": "old"}) for k in range(33)}
    return [
        Case("pattern-id-taken", "A pattern iteration id held by another job returns -10 "
             "and writes only the events cap.", (pattern(T + 60_000),), ("collision",),
             {_iteration(T + 60_000, "p"): job_hash({"name": "old"})}),
        Case("every-slot-walk", "An every iteration whose id is taken walks on by every to "
             "the first free slot.", (every(),), ("collision",), taken),
        Case("every-slots-busy", "With the first 33 slots taken, an every upsert returns "
             "-11.", (every(),), ("collision",), full),
    ]


def _next_cases() -> list[Case]:
    first = every()
    return [
        Case("next-iteration", "The current iteration produces the next, every ms later; "
             "ic becomes 2.", (first, nxt(NOW + 5, _iteration(NOW))), ("every-next",
                                                                          "producer")),
        Case("next-other-producer", "A producer that is not the current iteration gets nil "
             "and nothing is written.", (first, nxt(NOW + 5, _iteration(NOW - 1000))),
             ("producer",)),
        Case("next-exists", "When a job already holds the next iteration's id, the current "
             "one emits duplicated.", (first, nxt(NOW + 5, _iteration(NOW))), ("producer",),
             {_iteration(NOW + 1000): job_hash({"name": "old"})}),
        Case("next-twice", "The same producer again is no longer the current iteration: nil.",
             (first, nxt(NOW + 5, _iteration(NOW)), nxt(NOW + 6, _iteration(NOW))),
             ("producer",)),
        Case("next-missing-scheduler", "Without the scheduler nothing is written, not even "
             "the events cap.",
             (nxt(NOW, _iteration(NOW)),), ("producer",)),
        Case("next-catch-up", "After missed iterations the next fires at the slot after "
             "now's (offset 123).", (first, nxt(NOW + 5500, _iteration(NOW))),
             ("every-next",)),
        Case("next-catch-up-this-slot", "After missed iterations, a slot still ahead in "
             "now's interval is the next (offset 700).",
             (every(offset=700), nxt(T + 5500, _iteration(T + 700))), ("every-next",)),
        Case("next-pattern", "A pattern's next iteration fires at the client's nextMillis.",
             (pattern(T + 60_000), nxt(T + 60_001, _iteration(T + 60_000, "p"), T + 120_000,
                                       "p", {"repeat": {"pattern": PATTERN}})),
             ("pattern", "producer")),
        Case("next-every-from-job-opts", "A scheduler without every in its hash takes "
             "repeat.every from the iteration opts.",
             (pattern(T + 60_000), nxt(T + 60_001, _iteration(T + 60_000, "p"), T + 120_000,
                                       "p", {"repeat": {"every": 5000}})), ("every-next",)),
    ]


def _edge_cases() -> list[Case]:
    """What the scripts leave to the client, precedence between options, and odd layouts."""
    at_limit = {"repeat": zset([("s", NOW - 1000)]),
                "repeat:s": job_hash({"name": "report", "every": "1000", "offset": "123",
                                      "limit": "3", "ic": "3"})}
    late_start = {"repeat": zset([("s", NOW)]), _iteration(NOW): job_hash({"name": "report",
                                                                           "rjk": "s"}),
                  "active": wait_list(_iteration(NOW)),
                  "repeat:s": job_hash({"name": "report", "every": "1000", "offset": "123",
                                        "startDate": str(NOW + 100_000), "ic": "1"})}
    to_pattern = AddJobScheduler("s", NOW + 10, "report", pattern=PATTERN, next_millis=T + 60_000,
                                 job_opts={"repeat": {"pattern": PATTERN}})
    taken = {_iteration(T + 120_000, "p"): job_hash({"name": "old", "returnvalue": "1",
                                                     "finishedOn": str(T)})}
    own_active = {"repeat": zset([("p", T + 60_000)]),
                  _iteration(T + 60_000, "p"): job_hash({"name": "report", "rjk": "p"}),
                  "active": wait_list(_iteration(T + 60_000, "p")),
                  "repeat:p": job_hash({"name": "report", "pattern": PATTERN, "offset": "0",
                                        "ic": "1"})}
    return [
        Case("every-offset-zero", "An offset of 0 counts as none: the first iteration fires "
             "now and stores offset 123.", (every(offset=0),), ("every-first",)),
        Case("upsert-drops-old-options", "An upsert rewrites the hash: limit and tz of the "
             "earlier upsert are gone, ic kept.",
             (every(start_date=NOW + 5000, limit=5, tz="Europe/Paris"), every(NOW + 10)),
             ("upsert", "hash")),
        Case("pattern-upsert-own-active", "A pattern upsert at the fire time of its own active "
             "iteration returns -10.", (pattern(T + 60_000, NOW + 1),), ("collision",),
             own_active),
        Case("next-pattern-due", "A pattern's next iteration at now (the client's clamp) is "
             "added due: pushed to wait with the marker.",
             (pattern(T + 60_000), nxt(T + 60_001, _iteration(T + 60_000, "p"), T + 60_001,
                                       "p", {"repeat": {"pattern": PATTERN}})),
             ("pattern", "iteration")),
        Case("every-start-beats-offset", "A start date ahead wins over an offset slot; the "
             "given offset is still stored (400).", (every(offset=400, start_date=NOW + 5000),),
             ("every-first", "hash")),
        Case("every-offset-beyond-interval", "An offset beyond every is kept whole: offset 1500 "
             "at 123 fires 1377 ms later and stores 1500.", (every(offset=1500),),
             ("every-first", "hash")),
        Case("end-date-not-enforced", "An upsert whose endDate is past is stored and its "
             "iteration added, due now.", (every(end_date=NOW - 1000),), ("unenforced",)),
        Case("limit-not-enforced", "An upsert of a scheduler whose ic reached its limit adds an "
             "iteration; ic stays 3.", (every(limit=3),), ("unenforced",), at_limit),
        Case("every-to-pattern", "An every scheduler upserted as a pattern loses every, keeps "
             "offset 123, and moves its iteration.",
             (every(start_date=NOW + 5000), to_pattern), ("switch", "upsert")),
        Case("pattern-replaces-onto-taken-id", "A pattern upsert that replaced its iteration "
             "writes the next over a job holding that id.",
             (pattern(T + 60_000), pattern(T + 120_000, NOW + 1)), ("collision", "upsert"),
             taken),
        Case("next-ignores-start-date", "A start date ahead does not delay the next iteration: "
             "it places the first one only.", (nxt(NOW + 5, _iteration(NOW)),), ("every-next",),
             late_start),
        Case("next-every-from-hash", "The hash's every wins over the one in the iteration opts "
             "(1000 stored, 5000 sent).",
             (every(), nxt(NOW + 5, _iteration(NOW), job_opts={"repeat": {"every": 5000}})),
             ("every-next",)),
    ]


def _remove_and_get_cases() -> list[Case]:
    return [
        Case("remove-delayed", "Removing a scheduler removes its delayed iteration with a "
             "removed event.", (every(start_date=NOW + 5000), RemoveJobScheduler("s")),
             ("remove",)),
        Case("remove-waiting-stays", "Removing a scheduler leaves an iteration that already "
             "waits.", (every(), RemoveJobScheduler("s")), ("remove",)),
        Case("remove-missing", "Removing a scheduler that does not exist returns 1.",
             (RemoveJobScheduler("s"),), ("remove",)),
        Case("get", "getJobScheduler returns the hash and the next fire time.",
             (every(limit=5, data={"a": 1}), GetJobScheduler("s")), ("get",)),
        Case("get-missing", "getJobScheduler of a missing scheduler returns nothing.",
             (GetJobScheduler("s"),), ("get",)),
    ]


AREA = Area(
    "job-schedulers",
    "Job schedulers: addJobScheduler-11 (upsert, and the client's side of it: "
    "upsertJobScheduler), updateJobScheduler-12 (a worker's next iteration, and the client's "
    "side of it: pickUpIteration), removeJobScheduler-3 and getJobScheduler-1.",
    NOTES,
    tuple(_first_cases() + _upsert_cases() + _collision_cases() + _next_cases()
          + _edge_cases() + pick_up_cases() + upsert_cases() + _remove_and_get_cases()),
    since=versions.WORKER_SINCE,
    rule=(
        "A scheduler is `repeat` (zset: id -> next fire time) and `repeat:<id>` (hash: name, "
        "options, offset, template, ic). Each iteration is a job `repeat:<id>:<fire time>` "
        "(`rjk = <id>`), delayed by fire time - now or enqueued when due. An every "
        "scheduler's first fire time is its start date, else the next `k * every + offset` "
        "after now when an offset is given, else now; the next is the previous + every, or "
        "after missed iterations now's slot + offset (the next slot when that is not ahead). "
        "A pattern's fire time is the client's. An upsert replaces an iteration that has not "
        "started, at the same fire time when every is unchanged. A worker that picks up an "
        "iteration asks for the next one: the client, not the script, counts `repeat.count`, "
        "stops at `repeat.limit` and `repeat.endDate`, and takes a pattern's next fire time "
        "after the later of now and `prevMillis`."
    ),
)
