"""`bullmq-py`'s answer to `nextMillis` (the cron-parity area): the fire time its
`JobScheduler.upsertJobScheduler` computes for a pattern before any script runs.

The upsert adds nothing when now is past endDate; otherwise it takes
`bullmq.job_scheduler.default_repeat_strategy(now, repeat_opts)` (croniter in the official
package), adds nothing for None, and clamps the answer to `now`. The repeat options carry the
pattern, tz, startDate and endDate as Node's do; what the strategy does with each is the
package's own. An exception from it is "invalid": the upsert raises it, as Node's throws.
A package without the module or the function skips the op.

`pickUpIteration` is the package's `Worker.nextJobFromJobData(job, id, 0, 0, token)`, the step a
worker takes with the job a fetch handed it (the hash built from the op's rjk and opts), on the
op's frozen clock: what it asks its JobScheduler is what it writes. The result is the id of the
job its `JobScheduler.upsertJobScheduler` returns (the next iteration), None when that returns
none or is never called (a release whose worker takes no scheduler step: bullmq#4483).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from conformance.core.errors import CandidateSkipped
from reference_impl.cron_answers import INVALID
from reference_impl.ops import Result
from reference_impl.scheduler_ops import NextMillis, PickUpIteration

MODULE = "bullmq.job_scheduler"
STRATEGY = "default_repeat_strategy"


def repeat_opts(op: NextMillis) -> dict[str, Any]:
    """The repeat options an upsert of `op`'s pattern passes to the strategy."""
    found: dict[str, Any] = {"pattern": op.pattern}
    for name, value in (("tz", op.tz), ("startDate", op.start_date), ("endDate", op.end_date)):
        if value is not None:
            found[name] = value
    return found


def next_millis(package: str, op: NextMillis) -> Result:
    """The package's fire time for `op`: `{"next": ms or None}`, or "invalid"."""
    try:
        module = importlib.import_module(MODULE)
    except ImportError:
        raise CandidateSkipped(f"{package} has no {MODULE} (no job schedulers)") from None
    strategy = getattr(module, STRATEGY, None)
    if not callable(strategy):
        raise CandidateSkipped(f"{package} has no {MODULE}.{STRATEGY}")
    if op.end_date is not None and op.now > op.end_date:
        return {"next": None}  # the upsert's own check, before the strategy
    try:
        found = strategy(op.now, repeat_opts(op))
    except Exception:  # the upsert raises it: the client rejects the pattern or the zone
        return INVALID
    if found is None:
        return {"next": None}
    return {"next": max(int(found), op.now)}


def fetched_hash(op: PickUpIteration) -> dict[str, str]:
    """The picked-up job's hash as the package's fetch decodes it (strings), with the op's
    rjk (when it has one) and opts."""
    found = {"name": "report", "data": "{}", "opts": json.dumps(dict(op.opts)),
             "timestamp": str(op.now), "delay": "0", "priority": "0", "ats": "1",
             "processedOn": str(op.now)}
    if op.rjk is not None:
        found["rjk"] = op.rjk
    return found


def recording_upserts(worker: Any) -> tuple[list[Any], Callable[[], None]]:
    """Record what the worker's JobScheduler.upsertJobScheduler returns (the next iteration's
    Job, or None), on the instance; the list of returns, and the undo. A worker without a
    `jobScheduler` records nothing: it never asks for a next iteration."""
    returned: list[Any] = []
    try:
        scheduler = worker.jobScheduler
    except Exception:  # a release without schedulers: its worker has no such step
        return returned, lambda: None
    upsert = getattr(scheduler, "upsertJobScheduler", None)
    if not callable(upsert):
        return returned, lambda: None

    async def recorded(*args: Any, **kwargs: Any) -> Any:
        job = await upsert(*args, **kwargs)
        returned.append(job)
        return job

    scheduler.upsertJobScheduler = recorded
    return returned, lambda: delattr(scheduler, "upsertJobScheduler")


def next_iteration_id(returned: list[Any]) -> Result:
    """The op's result from the upserts recorded: the next iteration's id, or None."""
    if len(returned) > 1:
        raise ValueError(f"the worker asked for {len(returned)} next iterations, not one")
    job = returned[0] if returned else None
    found = getattr(job, "id", None) if job is not None else None
    return None if found is None else str(found)
