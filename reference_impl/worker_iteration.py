"""A worker's side of a job scheduler (6.x): what the client asks the scripts for when it picks
up an iteration (`PickUpIteration`).

npm bullmq's Worker, once it has fetched a job that names a scheduler (`rjk`), upserts that
scheduler without overriding it (JobScheduler.upsertJobScheduler with `override: false` and the
fetched job as producer), which ends in one updateJobScheduler call, or in none:

- the scheduler is the job's `rjk`, or else its opts' `repeatJobKey`; neither: no call;
- no call when the fetched opts' `repeat` has both or neither of `pattern` and `every` (the
  client throws; the worker reports it and goes on), when the iteration count
  (`repeat.count + 1`, or 1) exceeds `repeat.limit`, when now is past `repeat.endDate`, or
  when a pattern has no fire time (past its end date);
- a pattern's fire time is the cron library's next one after the later of now and the fetched
  opts' `prevMillis` (the previous fire time), from `startDate` if that is later still, and
  never before that base; an `every` scheduler's is the script's (the client sends none);
- the next iteration's opts are the fetched job's, with `repeat` minus `immediately` plus
  `count` (the iteration count), `offset` only when `every` and a nonzero offset are given,
  `startDate` and `endDate` when set; `jobId`, `delay` (overwritten by the script),
  `timestamp` (now), `prevMillis` (the fire time; none for `every`) and `repeatJobKey`.

The limit and the end date are enforced here, by the client, and nowhere in the scripts: a port
that skips them iterates forever; one that does not count (`repeat.count`) makes a Node worker
iterate past the limit. Legacy repeat keys of 5.x (`name:id:endDate:tz:pattern`) are told apart
by a read of Redis the op does not model; the vectors' scheduler ids have no ':'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_impl import cron_answers
from reference_impl.scheduler_ops import NextMillis, PickUpIteration, UpdateJobScheduler


def next_call(op: PickUpIteration) -> UpdateJobScheduler | None:
    """The updateJobScheduler call the client makes for `op`, or None when it makes none.

    An `every` scheduler's call carries next_millis 0: the client sends none (Node sends an
    empty argument), and the script computes the fire time itself.
    """
    asked = _asked(op)
    if asked is None:
        return None
    scheduler_id, repeat = asked
    fire: int | None = None
    lookup = _lookup(op, repeat)
    if lookup is not None:
        answer = cron_answers.next_millis(lookup)
        if isinstance(answer, str) or answer["next"] is None:
            return None  # the library rejects it, or no fire time before the end date
        fire = answer["next"]
    return UpdateJobScheduler(scheduler_id, op.now, fire or 0, op.producer_id,
                              merged_opts(op.opts, op.now, scheduler_id, repeat, _count(repeat),
                                          fire))


def scheduler_of(op: PickUpIteration) -> str | None:
    """The scheduler a picked-up job names: its `rjk`, or else its opts' `repeatJobKey` (npm
    bullmq's Job takes the opts' when the hash has no `rjk`); None when neither does."""
    found = op.rjk or op.opts.get("repeatJobKey")
    return str(found) if found else None


def cron_lookup(op: PickUpIteration) -> NextMillis | None:
    """The cron library's question for a pattern the client gets as far as computing: the
    next fire time after the later of now and the picked-up opts' `prevMillis`; None for an
    `every` scheduler and when the client asks for nothing before that."""
    asked = _asked(op)
    return None if asked is None else _lookup(op, asked[1])


def _lookup(op: PickUpIteration, repeat: dict[str, Any]) -> NextMillis | None:
    if not repeat.get("pattern"):
        return None
    base = max(op.now, int(op.opts.get("prevMillis") or 0))
    return NextMillis(str(repeat["pattern"]), base, text_or_none(repeat.get("tz")),
                      int_or_none(repeat.get("startDate")), int_or_none(repeat.get("endDate")))


def _asked(op: PickUpIteration) -> tuple[str, dict[str, Any]] | None:
    """The scheduler and the picked-up opts' `repeat`, when the client goes on to compute the
    next iteration; None when it stops first (no scheduler, invalid repeat options, the limit,
    the end date)."""
    scheduler_id = scheduler_of(op)
    if scheduler_id is None:
        return None
    repeat = dict(op.opts.get("repeat") or {})
    if bool(repeat.get("every")) == bool(repeat.get("pattern")):
        return None  # both or neither: the client throws before any call
    if repeat.get("limit") is not None and _count(repeat) > int(repeat["limit"]):
        return None
    end_date = repeat.get("endDate")
    if end_date and op.now > int(end_date):
        return None
    return scheduler_id, repeat


def _count(repeat: dict[str, Any]) -> int:
    """The next iteration's number: the picked-up one's `count` + 1 (1 without a count)."""
    return int(repeat["count"]) + 1 if repeat.get("count") else 1


def merged_opts(opts: Mapping[str, Any], now: int, scheduler_id: str, repeat: Mapping[str, Any],
                count: int, fire: int | None) -> dict[str, Any]:
    """An iteration's opts as the client merges them (JobScheduler.getNextJobOpts) from `opts`
    (a fetched job's, or an upsert's template) and the repeat options, at `now`. (`jobId` and
    `delay` are the script's to overwrite; an `every` iteration's are the client's
    placeholders, here the fire time 0's.)"""
    offset = repeat.get("offset")
    merged_repeat = {name: value for name, value in repeat.items()
                     if name not in ("immediately", "offset", "startDate", "endDate")}
    if repeat.get("every") and offset:
        merged_repeat["offset"] = offset
    merged_repeat["count"] = count
    for name in ("startDate", "endDate"):
        if repeat.get(name):
            merged_repeat[name] = int(repeat[name])
    merged: dict[str, Any] = {**opts, "repeat": merged_repeat,
                              "jobId": f"repeat:{scheduler_id}:{fire or 0}",
                              "delay": max(0, (fire or 0) - now),
                              "timestamp": now, "repeatJobKey": scheduler_id}
    merged.pop("prevMillis", None)
    if fire is not None:
        merged["prevMillis"] = fire
    return merged


def int_or_none(value: Any) -> int | None:
    """An option as the client reads it: an integer, or None when absent or empty."""
    return None if value is None or value == "" else int(value)


def text_or_none(value: Any) -> str | None:
    """An option as the client reads it: a string, or None when absent or empty."""
    return None if value is None or value == "" else str(value)
