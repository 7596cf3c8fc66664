"""The cron-parity oracle: the next fire times the pinned npm bullmq client computes.

A cron pattern's fire time is computed by the client, with its own cron library, before any
script runs; the model cannot derive it from the protocol, and a Python cron library would be
a third opinion. So the answers are Node's own: `cron_answers.json` holds, for every
`NextMillis` of the cron-parity area and every fire time a worker computes in the
job-schedulers area (`scheduler_pickups.cron_lookups`), what `ci/cron-answers.js` got from
the pinned bullmq's `defaultRepeatStrategy` (its cron-parser), in UTC, with
upsertJobScheduler's clamp to now.
`ci/cron_answers.py` writes the file, and its `--check` (run by the tests where Node is
installed) fails when the pinned client answers differently.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from reference_impl.scheduler_ops import NextMillis

#: The answer for a pattern or zone the client rejects (its upsert throws).
INVALID = "invalid"
ANSWERS_FILE = "cron_answers.json"

Answer = int | str | None


def key(op: NextMillis) -> tuple[Any, ...]:
    """What identifies an input (the op without its dataclass)."""
    return (op.pattern, op.now, op.tz, op.start_date, op.end_date)


def as_input(op: NextMillis) -> dict[str, Any]:
    """The op as `ci/cron-answers.js` reads it (absent options left out)."""
    found: dict[str, Any] = {"pattern": op.pattern, "now": op.now}
    for name, value in (("tz", op.tz), ("startDate", op.start_date), ("endDate", op.end_date)):
        if value is not None:
            found[name] = value
    return found


def answer_of(raw: dict[str, Any]) -> Answer:
    """One answer of the file: `next` (ms or null), or INVALID where the client threw."""
    if "error" in raw:
        return INVALID
    next_millis = raw["next"]
    return None if next_millis is None else int(next_millis)


@functools.cache
def _table() -> dict[tuple[Any, ...], Answer]:
    text = resources.files("reference_impl").joinpath(ANSWERS_FILE).read_text("utf-8")
    table: dict[tuple[Any, ...], Answer] = {}
    for raw in json.loads(text)["answers"]:
        op = NextMillis(raw["pattern"], raw["now"], raw.get("tz"), raw.get("startDate"),
                        raw.get("endDate"))
        table[key(op)] = answer_of(raw)
    return table


def next_millis(op: NextMillis) -> dict[str, int | None] | str:
    """Node's answer for `op`, normalized: `{"next": ms or None}`, or INVALID. LookupError
    when the file has none (regenerate it)."""
    try:
        found = _table()[key(op)]
    except KeyError:
        raise LookupError(f"no cron answer for {as_input(op)}: run python ci/cron_answers.py "
                          f"to ask the pinned Node client") from None
    if isinstance(found, str):
        return INVALID
    return {"next": found}
