"""job-schedulers, a queue's side: what a client sends when a caller upserts a scheduler
(`UpsertJobScheduler`; `reference_impl.scheduler_upsert` says how npm bullmq's
Queue.upsertJobScheduler decides). The script-level cases of `job_schedulers` give the fire
time and the merged opts by fiat; these give the caller's arguments, so a client is judged on
what it derives from them.
"""

from __future__ import annotations

from reference_impl.cases import Case, Flag, T
from reference_impl.scheduler_ops import NextMillis, UpsertJobScheduler

#: 123 ms past a whole second (2023-11-14T22:13:20.123Z).
NOW = T + 123
#: Every minute, at second 0: the next fire time after NOW is 22:14:00.
PATTERN = "0 * * * * *"
#: 09:00 in Paris every day.
NINE = "0 0 9 * * *"
PARIS = "Europe/Paris"
#: Midnight on January 1st: a year away.
NEW_YEAR = "0 0 0 1 1 *"

NOTES = {
    "upsert-client": Flag(
        "missing-write",
        "Queue.upsertJobScheduler(id, repeat, {name, data, opts}) names the scheduler's jobs "
        "after its id when the template has no name, stores the template's data and opts in "
        "the hash, and gives the first iteration the template's opts with repeat (count 1, "
        "the offset of an every scheduler, startDate and endDate in ms), timestamp, prevMillis "
        "(a pattern's fire time) and repeatJobKey; a pattern's fire time is the client's cron "
        "answer at now.",
    ),
    "upsert-client-skipped": Flag(
        "missing-write",
        "The client calls no script for a limit of 0 (the first iteration would exceed it), "
        "nor for a pattern with no fire time before its end date: nothing is written.",
    ),
}


def _upsert(repeat: dict[str, object], **template: object) -> UpsertJobScheduler:
    return UpsertJobScheduler("s", NOW, repeat, **template)  # type: ignore[arg-type]


def upsert_cases() -> list[Case]:
    """A caller's upserts, each from an empty queue."""
    return [
        Case("client-every", "Without a template, a client upsert names the jobs after the "
             "scheduler id; repeat.count is 1.",
             (_upsert({"every": 1000}),), ("upsert-client",)),
        Case("client-every-offset", "A client's every offset goes to the script and into the "
             "first iteration's repeat options.",
             (_upsert({"every": 1000, "offset": 400}),), ("upsert-client",)),
        Case("client-every-dates", "A client's start and end dates are stored, in ms, in the "
             "hash and in the iteration's repeat options.",
             (_upsert({"every": 60_000, "startDate": NOW + 5000, "endDate": NOW + 3_600_000}),),
             ("upsert-client",)),
        Case("client-template", "The template's name, data and opts are in the hash; the first "
             "iteration's opts carry its opts.",
             (_upsert({"every": 1000}, name="report", data={"a": 1},
                      opts={"attempts": 3, "backoff": {"type": "fixed", "delay": 1000}}),),
             ("upsert-client",)),
        Case("client-pattern", "A client pattern upsert fires at its cron answer (22:14:00), "
             "with prevMillis that fire time.",
             (_upsert({"pattern": PATTERN}),), ("upsert-client",)),
        Case("client-pattern-zone-start", "A Paris pattern with a start date a day ahead "
             "fires at the next 09:00 Paris; tz, startDate stored.",
             (_upsert({"pattern": NINE, "tz": PARIS, "startDate": NOW + 86_400_000}),),
             ("upsert-client",)),
        Case("client-limit-zero", "A client upsert with limit 0 calls no script: nothing is "
             "written.", (_upsert({"every": 1000, "limit": 0}),), ("upsert-client-skipped",)),
        Case("client-pattern-ends-first", "A yearly pattern whose end date comes first has no "
             "fire time: the client calls no script.",
             (_upsert({"pattern": NEW_YEAR, "endDate": NOW + 86_400_000}),),
             ("upsert-client-skipped",)),
    ]


def cron_lookups() -> list[NextMillis]:
    """The cron answers the upsert cases need (`ci/cron_answers.py` asks Node for them)."""
    from reference_impl.scheduler_upsert import cron_lookup

    return [cron_lookup(step) for case in upsert_cases() for step in case.when
            if isinstance(step, UpsertJobScheduler) and step.repeat.get("pattern")]
