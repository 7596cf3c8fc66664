"""job-schedulers, the worker's side: what a client asks for when it picks up an iteration
(`PickUpIteration`; `reference_impl.worker_iteration` says how npm bullmq's Worker decides).

Each case seeds a scheduler and its current iteration, already fetched (in `active`), and gives
the worker the fetched job's `rjk` and opts, as the fetch reply hands them over. The iteration
opts are the shape npm bullmq's Queue.upsertJobScheduler writes (`repeat` with `count`,
`repeatJobKey`, `timestamp`; `prevMillis` for a pattern).
"""

from __future__ import annotations

import json
from typing import Any

from reference_impl.cases import Case, Flag, T, job_hash, wait_list, zset
from reference_impl.scheduler_ops import NextMillis, PickUpIteration

#: The every scheduler's current fire time (offset 123 into the second).
FIRE = T + 123
#: A whole minute (2023-11-14T22:13:00Z): the pattern scheduler's current fire time.
MINUTE = T - 20_000
PATTERN = "0 * * * * *"
#: 09:00 in Paris every day; its fire time on 2023-11-14 (08:00 UTC, CET).
NINE = "0 0 9 * * *"
PARIS = "Europe/Paris"
NINE_PARIS = 1_699_948_800_000

NOTES = {
    "pick-up": Flag(
        "missing-write",
        "A worker that picks up an iteration asks for the next one (updateJobScheduler, the "
        "picked-up job as producer) with the picked-up job's opts, repeat.count + 1, "
        "timestamp now and repeatJobKey; prevMillis is the fire time of a pattern's, none for "
        "every.",
    ),
    "pick-up-skipped": Flag(
        "missing-write",
        "The client enforces limit and endDate: when repeat.count + 1 exceeds repeat.limit, or "
        "now is past repeat.endDate (or a pattern has no fire time before it), it asks for "
        "nothing and the scheduler stops. The scheduler is the job's rjk, else its "
        "opts.repeatJobKey; a job with neither is no iteration.",
    ),
    "pick-up-pattern": Flag(
        "score",
        "A pattern's next fire time is the cron library's first after the later of now and "
        "the picked-up opts' prevMillis, in repeat.tz: an iteration picked up early does not "
        "get its own fire time again.",
    ),
}


def _every_opts(count: int = 1, **repeat: Any) -> dict[str, Any]:
    """An every iteration's opts as npm bullmq writes them."""
    return {"repeat": {"every": 1000, "count": count, **repeat}, "repeatJobKey": "s",
            "jobId": f"repeat:s:{FIRE}", "timestamp": FIRE - 1000, "delay": 0}


def _pattern_opts(fire: int = MINUTE, count: int = 1, pattern: str = PATTERN,
                  **repeat: Any) -> dict[str, Any]:
    """A pattern iteration's opts as npm bullmq writes them."""
    return {"repeat": {"pattern": pattern, "count": count, **repeat}, "repeatJobKey": "p",
            "jobId": f"repeat:p:{fire}", "prevMillis": fire, "timestamp": fire - 30_000,
            "delay": 30_000}


def _seeded(scheduler_id: str, fire: int, opts: dict[str, Any],
            scheduler: dict[str, str], rjk: str | None = None) -> dict[str, Any]:
    """The scheduler (zset score and hash) and its iteration, fetched: in active."""
    job_id = f"repeat:{scheduler_id}:{fire}"
    iteration = {"name": "report", "data": "{}", "opts": json.dumps(opts),
                 "timestamp": str(opts["timestamp"]), "delay": str(opts["delay"]),
                 "priority": str(opts.get("priority", 0))}
    iteration["rjk"] = scheduler_id if rjk is None else rjk
    if not iteration["rjk"]:
        del iteration["rjk"]
    return {"repeat": zset([(scheduler_id, fire)]),
            f"repeat:{scheduler_id}": job_hash({"name": "report", **scheduler, "ic": "1"}),
            job_id: job_hash(iteration), "active": wait_list(job_id)}


def _every(opts: dict[str, Any], rjk: str | None = None) -> dict[str, Any]:
    return _seeded("s", FIRE, opts, {"every": "1000", "offset": "123"}, rjk)


def _pattern(opts: dict[str, Any], fire: int = MINUTE, **scheduler: str) -> dict[str, Any]:
    return _seeded("p", fire, opts, {"pattern": PATTERN, "offset": "0", **scheduler})


def _pick_every(opts: dict[str, Any], now: int = FIRE + 5, rjk: str | None = "s"
                ) -> PickUpIteration:
    return PickUpIteration(f"repeat:s:{FIRE}", now, rjk, opts)


def _pick_pattern(opts: dict[str, Any], now: int, fire: int = MINUTE) -> PickUpIteration:
    return PickUpIteration(f"repeat:p:{fire}", now, "p", opts)


def pick_up_cases() -> list[Case]:
    """The worker's side of the job-schedulers area."""
    carried = {**_every_opts(), "attempts": 3, "priority": 5}
    nine = _pattern_opts(NINE_PARIS, pattern=NINE, tz=PARIS)
    unnamed = {name: value for name, value in _every_opts().items() if name != "repeatJobKey"}
    return [
        Case("pick-up-every", "A worker picking up an every iteration adds the next, every ms "
             "later, with repeat.count 2.", (_pick_every(_every_opts()),), ("pick-up",),
             _every(_every_opts())),
        Case("pick-up-keeps-opts", "The next iteration takes the picked-up job's opts "
             "(priority 5, attempts 3), not the template's.",
             (_pick_every(carried),), ("pick-up",), _every(carried)),
        Case("pick-up-count-missing", "Opts without repeat.count count as the first "
             "iteration: the next one has count 1.",
             (_pick_every({**_every_opts(), "repeat": {"every": 1000}}),), ("pick-up",),
             _every({**_every_opts(), "repeat": {"every": 1000}})),
        Case("pick-up-every-offset", "An every iteration's nonzero repeat.offset is kept in "
             "the next one's opts.", (_pick_every(_every_opts(offset=123)),), ("pick-up",),
             _every(_every_opts(offset=123))),
        Case("pick-up-limit-last", "With count 2 and limit 3 the worker adds the third and "
             "last iteration.", (_pick_every(_every_opts(2, limit=3)),), ("pick-up",),
             _every(_every_opts(2, limit=3))),
        Case("pick-up-limit-reached", "With count 3 and limit 3 the worker asks for nothing: "
             "no next iteration, the scheduler stays.",
             (_pick_every(_every_opts(3, limit=3)),), ("pick-up-skipped",),
             _every(_every_opts(3, limit=3))),
        Case("pick-up-end-date-now", "At exactly repeat.endDate the next iteration is still "
             "added.", (_pick_every(_every_opts(endDate=FIRE + 5)),), ("pick-up",),
             _every(_every_opts(endDate=FIRE + 5))),
        Case("pick-up-end-date-passed", "Past repeat.endDate the worker asks for nothing.",
             (_pick_every(_every_opts(endDate=FIRE + 4)),), ("pick-up-skipped",),
             _every(_every_opts(endDate=FIRE + 4))),
        Case("pick-up-no-rjk", "Without rjk the scheduler is opts.repeatJobKey: the next "
             "iteration is still added.", (_pick_every(_every_opts(), rjk=None),),
             ("pick-up",), _every(_every_opts(), rjk="")),
        Case("pick-up-no-scheduler", "A job with repeat opts but neither rjk nor "
             "opts.repeatJobKey is no iteration: nothing is asked for.",
             (_pick_every(unnamed, rjk=None),), ("pick-up-skipped",), _every(unnamed, rjk="")),
        Case("pick-up-pattern", "A pattern's next iteration fires at the next minute, with "
             "prevMillis = its fire time.",
             (_pick_pattern(_pattern_opts(), MINUTE + 5),), ("pick-up", "pick-up-pattern"),
             _pattern(_pattern_opts())),
        Case("pick-up-pattern-early", "Picked up before its fire time, a pattern's next is "
             "the match after prevMillis, not its own.",
             (_pick_pattern(_pattern_opts(), MINUTE - 500),), ("pick-up-pattern",),
             _pattern(_pattern_opts())),
        Case("pick-up-pattern-late", "Picked up 2.5 minutes late, the next is the first match "
             "after now: the missed ones are skipped.",
             (_pick_pattern(_pattern_opts(), MINUTE + 150_000),), ("pick-up-pattern",),
             _pattern(_pattern_opts())),
        Case("pick-up-pattern-tz", "repeat.tz places the next fire time: 09:00 in Paris is "
             "08:00 UTC in November.", (_pick_pattern(nine, NINE_PARIS + 5, NINE_PARIS),),
             ("pick-up-pattern",), _pattern(nine, NINE_PARIS, pattern=NINE, tz=PARIS)),
        Case("pick-up-drops-immediately", "repeat.immediately is not carried to the next "
             "iteration's opts.", (_pick_every(_every_opts(immediately=True)),), ("pick-up",),
             _every(_every_opts(immediately=True))),
        Case("pick-up-pattern-offset-dropped", "A pattern iteration's repeat.offset is not "
             "carried to the next one (only every's is).",
             (_pick_pattern(_pattern_opts(offset=250), MINUTE + 5),), ("pick-up",),
             _pattern(_pattern_opts(offset=250))),
        Case("pick-up-pattern-start-date", "A repeat.startDate ahead of now is where the "
             "pattern's next fire time is counted from.",
             (_pick_pattern(_pattern_opts(startDate=MINUTE + 600_500), MINUTE + 5),),
             ("pick-up-pattern",), _pattern(_pattern_opts(startDate=MINUTE + 600_500))),
        Case("pick-up-pattern-end-date", "A pattern with no fire time before repeat.endDate "
             "gets no next iteration.",
             (_pick_pattern(_pattern_opts(endDate=MINUTE + 59_999), MINUTE + 5),),
             ("pick-up-skipped",), _pattern(_pattern_opts(endDate=MINUTE + 59_999))),
    ]


def cron_lookups() -> list[NextMillis]:
    """The cron answers the pick-up cases need (`ci/cron_answers.py` asks Node for them)."""
    from reference_impl.worker_iteration import cron_lookup

    found = [cron_lookup(step) for case in pick_up_cases() for step in case.when
             if isinstance(step, PickUpIteration)]
    return [lookup for lookup in found if lookup is not None]
