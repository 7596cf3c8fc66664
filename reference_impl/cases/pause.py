"""pause: Queue.pause / Queue.resume (pause-7) with 6.x semantics.

Jobs stay in `wait` while `meta.paused` is set; only marker "0" is suppressed. Resume restores a
marker and migrates a legacy (<= v5) `paused` list back into `wait`.
"""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, T, add, fetch, job_hash, wait_list
from reference_impl.ops import ChangePriority, Pause, Promote, Resume

NOTES = {
    "pause-flag": Flag(
        "pause",
        "Pause does HSET meta paused 1 and DEL marker; jobs stay where they are and no `paused` "
        "list is written.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.0.0",),
    ),
    "paused-writes": Flag(
        "pause",
        "While paused, standard and prioritized adds, promote and changePriority write no "
        "marker \"0\"; delayed writes still write marker \"1\".",
        ("https://github.com/taskforcesh/bullmq/pull/2389",),
    ),
    "paused-fetch": Flag(
        "pause",
        "A paused fetch still promotes due delayed jobs into wait but returns no job and next 0.",
    ),
    "resume-markers": Flag(
        "wake-marker",
        "Resume writes marker \"0\" when wait + prioritized is non-empty (ignoring concurrency), "
        "else marker \"1\" from the delayed head, else no marker.",
    ),
    "legacy-migration": Flag(
        "older-protocol",
        "Resume moves a legacy paused list into wait: RENAME when wait is absent, else RPUSH "
        "of up to 7000 jobs, returning how many are left. The vectors check one call of the "
        "script; npm bullmq's Queue.resume() repeats it until nothing is left (its adapter "
        "runs one pass), PyPI bullmq's calls it once.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v6.0.0",),
    ),
    "pause-events": Flag(
        "event",
        "pause and resume emit untrimmed `paused` / `resumed` events and clear or set only "
        "meta.paused.",
    ),
}

F = T + 5000
PAUSED = {"meta": job_hash({"paused": "1"})}


def _cases() -> list[Case]:
    return [
        # --- pause ---------------------------------------------------------------------------
        Case("pause-empty-queue", "Pause on an empty queue writes only meta paused=1 and a paused "
             "event.", (Pause(),), ("pause-flag", "pause-events")),
        Case("pause-twice", "A second pause changes nothing but writes a second paused event.",
             (add("w"), Pause(), Pause()), ("pause-flag", "pause-events")),
        # --- while paused --------------------------------------------------------------------
        Case("adds-while-paused",
             "After pause, a standard add leaves the marker absent; a delayed add writes only 1.",
             (add("w"), Pause(), add("s"), add("d", delay=5000)), ("paused-writes",)),
        Case("prioritized-add-while-paused",
             "After pause, a prioritized add gets pc 1 and writes no marker.",
             (Pause(), add("p", priority=2)), ("paused-writes",)),
        Case("fetch-while-paused",
             "A paused fetch at F promotes the due job into wait and returns job null, next 0.",
             (add("d", delay=5000), add("e", delay=9000), Pause(), fetch(F)), ("paused-fetch",)),
        Case("promote-while-paused-then-resume",
             "promote while paused adds no marker 0; the resume then writes it.",
             (add("d", delay=5000), Pause(), Promote("1"), Resume()),
             ("paused-writes", "resume-markers")),
        Case("change-priority-while-paused",
             "After pause, changePriority moves a waiting job to prioritized with no marker.",
             (add("w"), Pause(), ChangePriority("1", 4)), ("paused-writes",)),
        # --- resume --------------------------------------------------------------------------
        Case("resume-with-waiting", "Resume with a waiting job clears paused, writes marker 0 and "
             "a resumed event.", (add("w"), Pause(), Resume()),
             ("resume-markers", "pause-events")),
        Case("resume-with-prioritized", "Resume with only a prioritized job writes marker 0.",
             (add("p", priority=2), Pause(), Resume()), ("resume-markers",)),
        Case("resume-not-paused", "Resume on a queue that is not paused still emits resumed.",
             (add("w"), Resume()), ("pause-events",)),
        Case("resume-ignores-concurrency",
             "Resume writes marker 0 for a waiting job even when concurrency is reached.",
             (Resume(),), ("resume-markers",),
             given={"meta": job_hash({"paused": "1", "concurrency": "1"}),
                    "active": wait_list("busy"), "wait": wait_list("1"),
                    "1": job_hash({"name": "a", "priority": "0"})}),
        Case("fetch-after-resume", "A fetch while paused returns nothing; after resume it takes "
             "the job.", (add("w"), Pause(), fetch(T), Resume(), fetch(T)),
             ("paused-fetch", "resume-markers")),
        # --- legacy paused list --------------------------------------------------------------
        Case("legacy-rename", "Resume RENAMEs a legacy paused list into an absent wait.",
             (Resume(),), ("legacy-migration",),
             given={**PAUSED, "paused": wait_list("3", "2", "1")}),
        Case("legacy-rpush-runs-first",
             "Resume RPUSHes legacy jobs to wait's right end, so the next fetch takes one.",
             (Resume(), fetch(T)), ("legacy-migration",),
             given={**PAUSED, "wait": wait_list("2", "1"), "paused": wait_list("5", "4"),
                    "4": job_hash({"name": "l", "priority": "0"})}),
        Case("pause-leaves-legacy-list", "Pause neither reads nor moves a legacy paused list.",
             (Pause(),), ("pause-flag",), given={"paused": wait_list("2", "1")}),
        Case("legacy-7001-leaves-one",
             "Resume moves exactly 7000 of 7001 legacy jobs per call and returns the 1 left.",
             (Resume(),), ("legacy-migration",),
             given={**PAUSED, "wait": wait_list("w"),
                    "paused": wait_list(*(f"l{i}" for i in range(7001)))}),
    ]


AREA = Area(
    "pause",
    "Queue pause and resume (6.x): meta.paused, jobs kept in wait, suppressed marker \"0\", "
    "markers restored on resume, and the legacy paused list migration.",
    NOTES,
    tuple(_cases()),
    rule=(
        "Pause sets `meta.paused = 1` and deletes the marker; jobs stay in wait. While "
        'paused, adds, promote and changePriority write no marker "0", delayed writes still '
        'write marker "1", and a fetch promotes due jobs but returns none. Resume clears '
        '`meta.paused` and writes marker "0" when wait or prioritized hold jobs, else '
        'marker "1" from the delayed head.'
    ),
)
