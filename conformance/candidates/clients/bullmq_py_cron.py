"""`bullmq-py`'s answer to `nextMillis` (the cron-parity area): the fire time its
`JobScheduler.upsertJobScheduler` computes for a pattern before any script runs.

The upsert adds nothing when now is past endDate; otherwise it takes
`bullmq.job_scheduler.default_repeat_strategy(now, repeat_opts)` (croniter in the official
package), adds nothing for None, and clamps the answer to `now`. The repeat options carry the
pattern, tz, startDate and endDate as Node's do; what the strategy does with each is the
package's own. An exception from it is "invalid": the upsert raises it, as Node's throws.
A package without the module or the function skips the op.
"""

from __future__ import annotations

import importlib
from typing import Any

from conformance.core.errors import CandidateSkipped
from reference_impl.cron_answers import INVALID
from reference_impl.ops import Result
from reference_impl.scheduler_ops import NextMillis

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
