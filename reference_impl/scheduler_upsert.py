"""A queue's side of a job scheduler (6.x): what the client sends when a caller upserts one
(`UpsertJobScheduler`), before addJobScheduler-11 runs.

npm bullmq's Queue.upsertJobScheduler(id, repeat, {name, data, opts}) hands JobScheduler its
repeat options, the template's name (else the scheduler id), data (else `{}`) and opts (the
queue's default job opts under the template's), with `override`. The client, not the script:

- stops with no call when the first iteration's count (1) exceeds `repeat.limit`, or when a
  pattern has no fire time (none before its end date);
- computes a pattern's fire time with its cron library at now (from `startDate` if later, in
  `tz`), never before now; an `every` scheduler's is the script's (the client sends none);
- sends the scheduler options it was given (start and end dates in ms) and the offset only
  for `every` with a nonzero one;
- merges the first iteration's opts (`worker_iteration.merged_opts`, count 1): the template's
  opts, `repeat` without `immediately`, `timestamp`, `prevMillis` and `repeatJobKey`.

A port that derives the template name otherwise, or drops the template opts from the
iteration, writes another scheduler hash and other iteration opts than Node does.
"""

from __future__ import annotations

from reference_impl import cron_answers
from reference_impl.scheduler_ops import AddJobScheduler, NextMillis, UpsertJobScheduler
from reference_impl.worker_iteration import int_or_none, merged_opts, text_or_none

#: The first iteration's number.
FIRST = 1


def upsert_call(op: UpsertJobScheduler) -> AddJobScheduler | None:
    """The addJobScheduler call the client makes for `op`, or None when it makes none.

    Raises ValueError for options the client rejects by throwing (both or neither of every
    and pattern, an end date before now, immediately with a start date): the vectors hold
    none, since a scripts directory cannot throw as a client does.
    """
    repeat = dict(op.repeat)
    every, pattern = repeat.get("every"), repeat.get("pattern")
    end_date = int_or_none(repeat.get("endDate"))
    if bool(every) == bool(pattern) or (end_date is not None and end_date < op.now) or (
            repeat.get("immediately") and repeat.get("startDate")):
        raise ValueError(f"the client throws on these repeat options: {repeat}")
    limit = repeat.get("limit")
    if limit is not None and int(limit) < FIRST:
        return None
    start_date = int_or_none(repeat.get("startDate"))
    tz = repeat.get("tz")
    fire: int | None = None
    if pattern:
        answer = cron_answers.next_millis(cron_lookup(op))
        if isinstance(answer, str):
            raise ValueError(f"the client throws on pattern {pattern!r}")
        if answer["next"] is None:
            return None
        fire = max(answer["next"], op.now)
    offset = repeat.get("offset")
    return AddJobScheduler(
        op.scheduler_id, op.now, op.name if op.name is not None else op.scheduler_id,
        every=int(every) if every else None, pattern=str(pattern) if pattern else None,
        next_millis=fire, offset=int(offset) if every and offset else None,
        start_date=start_date, end_date=end_date, tz=str(tz) if tz else None,
        limit=None if limit is None else int(limit), data=op.data, template_opts=op.opts,
        job_opts=merged_opts(op.opts, op.now, op.scheduler_id, repeat, FIRST, fire))


def cron_lookup(op: UpsertJobScheduler) -> NextMillis:
    """The cron library's question for a pattern upsert: its next fire time at now."""
    repeat = op.repeat
    return NextMillis(str(repeat["pattern"]), op.now, text_or_none(repeat.get("tz")),
                      int_or_none(repeat.get("startDate")), int_or_none(repeat.get("endDate")))

