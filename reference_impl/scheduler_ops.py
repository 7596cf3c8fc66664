"""The job scheduler ops (6.x): upserting, iterating, removing and reading a scheduler. Each
mirrors one client call, with its clock passed in.

A scheduler lives in two keys: its id in the `repeat` zset, scored by the fire time of its
current iteration, and the hash `repeat:<id>` (name, the repeat options, the template's data
and opts, the iteration count `ic`). Its current iteration is a job `repeat:<id>:<millis>`.

For a cron `pattern` the client computes the next fire time with its own cron library and
sends it (`next_millis`); for `every` the script computes it from the clock, the offset and
the start date, and ignores what the client sent.

Normalized results: `AddJobScheduler` gives `{"job": id, "delay": ms}`, or the script's
negative code (-10: a pattern's iteration id is taken; -11: every slot an `every` scheduler
tried is taken); `UpdateJobScheduler` gives the new iteration's id, or None; `RemoveJobScheduler`
gives 0 (removed) or 1 (no such scheduler); `GetJobScheduler` gives `{"fields": {...},
"next": millis}`, or None for a missing scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AddJobScheduler:
    """Queue.upsertJobScheduler at `now` (addJobScheduler-11).

    `every` or `pattern` (exactly one); `next_millis` is the client's next fire time for a
    pattern (its cron library's answer, clamped to `now`). `offset`, `start_date`, `end_date`,
    `tz` and `limit` are the scheduler options the client packs (`start_date` and `end_date` in
    ms). `data` is the template's data, `template_opts` the job options every iteration gets,
    and `job_opts` the options of this iteration as the client merges them (`repeat` holds the
    repeat options, `repeatJobKey` the scheduler id, ...). The script adds `delay` and `jobId`.
    """

    scheduler_id: str
    now: int
    name: str
    every: int | None = None
    pattern: str | None = None
    next_millis: int | None = None
    offset: int | None = None
    start_date: int | None = None
    end_date: int | None = None
    tz: str | None = None
    limit: int | None = None
    data: Any = field(default_factory=dict)
    template_opts: Mapping[str, Any] = field(default_factory=dict)
    job_opts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UpdateJobScheduler:
    """A worker's next iteration, as it picks up the current one (updateJobScheduler-12): the
    scheduler's next job, added only when `producer_id` is the current iteration's id and the
    next one does not exist yet (else a `duplicated` event). `next_millis` is the client's
    next fire time (a pattern's; an `every` scheduler's is computed by the script)."""

    scheduler_id: str
    now: int
    next_millis: int
    producer_id: str
    job_opts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RemoveJobScheduler:
    """Queue.removeJobScheduler (removeJobScheduler-3): the scheduler's keys, and its current
    iteration when that is still delayed."""

    scheduler_id: str


@dataclass(frozen=True)
class GetJobScheduler:
    """Queue.getJobScheduler's read (getJobScheduler-1): the hash and the next fire time."""

    scheduler_id: str


@dataclass(frozen=True)
class NextMillis:
    """The client's next fire time of a cron `pattern` at `now`, as Queue.upsertJobScheduler
    computes it before any script runs (the cron-parity area): the repeat strategy's answer
    for the later of `now` and `start_date`, in zone `tz` (UTC when None), or none past
    `end_date`. Normalized result: `{"next": ms}`, `{"next": None}` (no fire time: the upsert
    adds nothing), or "invalid" (the client rejects the pattern or the zone: the upsert throws).
    Nothing is written to Redis."""

    pattern: str
    now: int
    tz: str | None = None
    start_date: int | None = None
    end_date: int | None = None


@dataclass(frozen=True)
class PickUpIteration:
    """A worker's side of a scheduler, as it picks up iteration `producer_id` at `now`
    (Worker.nextJobFromJobData, 6.x): from the fetched job's `rjk` and `opts` alone, the client
    decides whether to ask for the next iteration, computes a pattern's fire time (its cron
    library), merges the next iteration's opts, and calls updateJobScheduler; or calls nothing
    (no scheduler named, the repeat `limit` reached, past `endDate`, no fire time). `rjk` and
    `opts` are the fetched hash's fields as stored (`rjk` None when the hash has none; `opts`
    parsed from JSON). Normalized result: the next iteration's id, or None (nothing called, or
    the script added nothing)."""

    producer_id: str
    now: int
    rjk: str | None = None
    opts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UpsertJobScheduler:
    """Queue.upsertJobScheduler(scheduler_id, repeat, {name, data, opts}) at `now`, as a
    caller makes it (6.x): the client checks the repeat options, computes a pattern's fire time
    (its cron library), merges the first iteration's opts and calls addJobScheduler, or calls
    nothing (`repeat.limit` 0, a pattern without a fire time before its end date). `repeat` is
    the repeat options as given (`every` or `pattern`, `offset`, `startDate`, `endDate` in ms,
    `tz`, `limit`); `name` the template's job name (None: the scheduler id), `data` and `opts`
    the template's. Normalized result: as AddJobScheduler's, or None when nothing was called.
    The vectors give only options the client accepts (an end date before now, both or neither
    of every and pattern make it throw before any call)."""

    scheduler_id: str
    now: int
    repeat: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    data: Any = field(default_factory=dict)
    opts: Mapping[str, Any] = field(default_factory=dict)


SchedulerOp = (AddJobScheduler | UpdateJobScheduler | RemoveJobScheduler | GetJobScheduler
               | NextMillis | PickUpIteration | UpsertJobScheduler)

#: Vector spelling of each scheduler op.
SCHEDULER_OPS: dict[str, type] = {
    "addJobScheduler": AddJobScheduler,
    "updateJobScheduler": UpdateJobScheduler,
    "removeJobScheduler": RemoveJobScheduler,
    "getJobScheduler": GetJobScheduler,
    "nextMillis": NextMillis,
    "pickUpIteration": PickUpIteration,
    "upsertJobScheduler": UpsertJobScheduler,
}
#: The ops a client computes without calling a script: a scripts directory cannot apply them,
#: and the runner skips them there with this reason.
CLIENT_SIDE: dict[str, str] = {
    "nextMillis": "the client computes a cron pattern's fire time (its cron library); no "
                  "script does",
}
#: The scheduler script calls as vectors give them (an upsert with the client's fire time and
#: merged opts, the script side of a worker's next iteration, removal, a read), apart from the
#: client's own computations (nextMillis) and the calls a caller makes (pickUpIteration,
#: upsertJobScheduler): no adapter protocol version has them, and no client candidate drives
#: them.
QUEUE_CALLS = frozenset({"addJobScheduler", "updateJobScheduler", "removeJobScheduler",
                         "getJobScheduler"})
#: Vector spelling of the scheduler ops' fields, where it differs from the Python name.
SCHEDULER_FIELDS = {
    "scheduler_id": "schedulerId", "next_millis": "nextMillis", "start_date": "startDate",
    "end_date": "endDate", "template_opts": "templateOpts", "job_opts": "jobOpts",
    "producer_id": "producerId",
}
