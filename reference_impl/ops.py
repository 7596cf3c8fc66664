"""The operations a vector applies, with explicit clocks, and their normalized results.

Each op mirrors one BullMQ client call. Results are normalized so that every candidate, whatever
its language, can report them the same way:

- `Add` and `AddParentJob` return the job id as a string (or the existing id for a duplicate
  custom id), or the script's negative code (-5: no parent; -7: another parent holds the id);
- `MoveToActive` returns `{"job": id or None, "ttl": rate-limit ms, "next": next fire ms}`;
- `Promote`, `ChangeDelay`, `ChangePriority` and `MoveToDelayed` return the script's integer
  code (`MoveToDelayed` with fetchNext: `{job, ttl, next}` when it fetched); `Pause` and
  `Resume` return the number of legacy paused jobs left to migrate (0), or nothing (null)
  before 6.0.0;
- the worker half's ops (`reference_impl.worker_ops`) as documented there. A rate-limited
  fetch's `ttl` is a `Pttl`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reference_impl.getter_ops import GETTER_FIELDS, GETTER_OPS, GetterOp
from reference_impl.maintenance_ops import MAINTENANCE_FIELDS, MAINTENANCE_OPS, MaintenanceOp
from reference_impl.repeatable_ops import REPEATABLE_FIELDS, REPEATABLE_OPS, RepeatableOp
from reference_impl.scheduler_ops import SCHEDULER_FIELDS, SCHEDULER_OPS, SchedulerOp
from reference_impl.worker_ops import (
    FLOW_JOB_OPS,
    WORKER_FIELDS,
    WORKER_OPS,
    AddLog,
    ExtendLock,
    ExtendLocks,
    GetDependencyCounts,
    GetRateLimitTtl,
    MoveJobFromActiveToWait,
    MoveStalledJobsToWait,
    MoveToFinished,
    MoveToWaitingChildren,
    Pttl,
    ReleaseLock,
    RemoveChildDependency,
    RemoveDeduplicationKey,
    RemoveJob,
    RemoveUnprocessedChildren,
    RetryJob,
    UpdateData,
    UpdateProgress,
)

Route = Literal["standard", "delayed", "prioritized"]


@dataclass(frozen=True)
class Add:
    """Queue.add: `opts` is the map a client msgpacks into ARGV[3] (delay, priority, lifo...)."""

    name: str
    timestamp: int
    data: Any = field(default_factory=dict)
    opts: Mapping[str, Any] = field(default_factory=dict)
    job_id: str | None = None

    def route(self) -> Route:
        """Which add script a client calls: delay > 0 wins, then a non-zero priority.

        This is Node's rule. Python routes on truthiness, which only differs for negative
        delays; vectors avoid those.
        """
        if int(self.opts.get("delay", 0) or 0) > 0:
            return "delayed"
        if self.opts.get("priority"):
            return "prioritized"
        return "standard"


@dataclass(frozen=True)
class AddParentJob:
    """FlowProducer's add of a job with children (addParentJob-6): stored like `Add`, then put
    in `waiting-children` scored by its timestamp, to wait there for its children. A parent
    can itself have a parent (`opts.parent`, as for `Add`)."""

    name: str
    timestamp: int
    data: Any = field(default_factory=dict)
    opts: Mapping[str, Any] = field(default_factory=dict)
    job_id: str | None = None


@dataclass(frozen=True)
class AddFlow:
    """FlowProducer.add of a tree of jobs at `timestamp` (one transaction): `flow` is the root
    node `{name, jobId, data?, opts?, children?}`, each child a node of the same form. Nodes
    with children are added by addParentJob, the others by the add scripts, level by level as
    the Node client orders them, each with the defer-parent-release flag; then each parent is
    released if nothing is pending (releaseParentIfNoPendingDependencies). The result is the
    root's reply: its id, or its negative code."""

    timestamp: int
    flow: Mapping[str, Any]


@dataclass(frozen=True)
class MoveToActive:
    """Worker fetch at `now` with a lock token; `limiter` is the worker's `{max, duration}`
    and `name` the worker name Node sends (stored as `pb`)."""

    now: int
    token: str = "tok"
    lock_duration: int = 30000
    limiter: Mapping[str, int] | None = None
    name: str | None = None


@dataclass(frozen=True)
class Promote:
    """Job.promote: move one delayed job to wait/prioritized now."""

    job_id: str


@dataclass(frozen=True)
class ChangeDelay:
    """Job.changeDelay(delay) called at `now`."""

    job_id: str
    delay: int
    now: int


@dataclass(frozen=True)
class ChangePriority:
    """Job.changePriority({priority, lifo})."""

    job_id: str
    priority: int
    lifo: bool = False


@dataclass(frozen=True)
class MoveToDelayed:
    """Worker moves its active job back to delayed at `now` (a retry with a client-computed
    backoff `delay`, or Job.moveToDelayed with skip_attempt)."""

    job_id: str
    now: int
    delay: int
    token: str = "tok"
    skip_attempt: bool = False
    fields: Mapping[str, str] | None = None
    fetch_next: bool | None = None


@dataclass(frozen=True)
class Pause:
    """Queue.pause."""


@dataclass(frozen=True)
class Resume:
    """Queue.resume."""


Op = (Add | AddParentJob | AddFlow | MoveToActive | Promote | ChangeDelay | ChangePriority
      | MoveToDelayed | Pause | Resume
      | MoveToFinished | RetryJob | ExtendLock | ExtendLocks | ReleaseLock
      | MoveStalledJobsToWait | MoveJobFromActiveToWait | GetRateLimitTtl
      | RemoveDeduplicationKey | RemoveJob | UpdateProgress | UpdateData | AddLog
      | MoveToWaitingChildren | GetDependencyCounts | RemoveChildDependency
      | RemoveUnprocessedChildren | SchedulerOp | RepeatableOp | GetterOp | MaintenanceOp)

#: Vector spelling of each op (the `op` field of a `when` step).
OP_NAMES: dict[str, type[Op]] = {
    "add": Add,
    "addParentJob": AddParentJob,
    "addFlow": AddFlow,
    "moveToActive": MoveToActive,
    "promote": Promote,
    "changeDelay": ChangeDelay,
    "changePriority": ChangePriority,
    "moveToDelayed": MoveToDelayed,
    "pause": Pause,
    "resume": Resume,
    **WORKER_OPS,
    **FLOW_JOB_OPS,
    **SCHEDULER_OPS,
    **REPEATABLE_OPS,
    **GETTER_OPS,
    **MAINTENANCE_OPS,
}
#: The ops of the worker half (an adapter that speaks protocol version 1 is never sent them).
WORKER_OP_NAMES = frozenset(WORKER_OPS)
_NAME_OF: dict[type, str] = {op_type: name for name, op_type in OP_NAMES.items()}


def op_name(op: object) -> str:
    """The vector spelling of an op's type (`add`, `moveToActive`, ...)."""
    name = _NAME_OF.get(type(op))
    if name is None:  # a subclass of an op
        name = next(k for k, v in OP_NAMES.items() if isinstance(op, v))
    return name
_FIELD_NAMES = {"job_id": "jobId", "lock_duration": "lockDuration",
                "skip_attempt": "skipAttempt", **WORKER_FIELDS, **SCHEDULER_FIELDS,
                **REPEATABLE_FIELDS, **GETTER_FIELDS,
                **MAINTENANCE_FIELDS}


_ID_LISTS = ("job_ids", "tokens", "types", "priorities")


def op_to_dict(op: Op) -> dict[str, Any]:
    """The vector form of an op, with defaults spelled out."""
    out: dict[str, Any] = {"op": op_name(op)}
    for key, value in vars(op).items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = dict(value)
        elif key in _ID_LISTS:
            value = list(value)
        out[_FIELD_NAMES.get(key, key)] = value
    return out


def op_from_dict(raw: Mapping[str, Any]) -> Op:
    """Parse a vector `when` step's op (its `queue` aside: see `step_parts`); the schema has
    already checked field names and types."""
    cls = OP_NAMES[raw["op"]]
    back = {v: k for k, v in _FIELD_NAMES.items()}
    kwargs = {back.get(k, k): v for k, v in raw.items() if k not in ("op", QUEUE_FIELD)}
    for name in _ID_LISTS:  # frozen ops hold tuples; JSON values (data) stay as they came
        if name in kwargs:
            kwargs[name] = tuple(kwargs[name])
    return cls(**kwargs)


@dataclass(frozen=True)
class OnQueue:
    """A case's op run on another queue of its vector (flows across queues): written as the
    op with `queue` set to that queue's ref (`reference_impl.keys.QUEUE2_REF`)."""

    queue: str
    op: Op


#: A step of a case: an op on the vector's own queue, or on another.
Step = Op | OnQueue
#: The field of a `when` step naming the queue it runs on (absent: the vector's own).
QUEUE_FIELD = "queue"


def step_parts(step: Step) -> tuple[str | None, Op]:
    """The queue ref a step runs on (None: the vector's own) and its op."""
    return (step.queue, step.op) if isinstance(step, OnQueue) else (None, step)


def step_to_dict(step: Step) -> dict[str, Any]:
    """The vector form of a step: its op's, with `queue` when it runs on another queue."""
    queue, op = step_parts(step)
    out = op_to_dict(op)
    if queue is not None:
        out[QUEUE_FIELD] = queue
    return out


MoveResult = dict[str, Any]
#: None only from pause and resume before 6.0.0, whose script returned nothing.
Result = str | int | MoveResult | list[str] | list[int] | list[Any] | Pttl | None


def fetched(job: str | None, ttl: int | Pttl = 0, next_ms: int = 0) -> MoveResult:
    """The normalized moveToActive result."""
    return {"job": job, "ttl": ttl, "next": next_ms}
