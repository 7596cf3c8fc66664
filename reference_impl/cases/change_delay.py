"""change-delay: changeDelay(id, delay, now) re-scores a delayed job from now, with the bump."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, S, T, add, fetch, job_hash, zset
from reference_impl.ops import ChangeDelay, Pause

NOTES = {
    "from-now": Flag(
        "score", "The new fire time is now + delay; the job's timestamp plays no part.",
        ("https://github.com/taskforcesh/bullmq/pull/789",),
    ),
    "band-bump": Flag("score", "The new score takes the band bump like any insert."),
    "return-code": Flag(
        "precondition", "-1 when the job hash is missing, -3 when it is not in delayed."
    ),
    "no-side-effects": Flag(
        "key-layout", "A failed changeDelay writes nothing; a successful one touches only "
        "the delayed zset, the delay field, the event and marker \"1\"."
    ),
    "marker": Flag("wake-marker", "Marker \"1\" is recomputed from the head after the change."),
    "precision": Flag("score", "The changed score is a double like any other."),
}

F = T + 5000


def _cases() -> list[Case]:
    return [
        Case("now-before-timestamp",
             "A job created at T+10000 re-delayed at now=T fires at T+2000.",
             (add("a", T + 10_000, delay=5000), ChangeDelay("1", 2000, T)), ("from-now",)),
        Case("overtakes-earlier-job", "Re-delaying the later job to fire first reorders the zset.",
             (add("a", delay=5000), add("b", delay=9000), ChangeDelay("2", 100, T)),
             ("from-now",)),
        Case("joins-band-of-two", "Re-delaying into a band holding two jobs scores F*4096+2.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=7000),
              ChangeDelay("3", 5000, T)), ("band-bump",)),
        Case("into-saturated-band", "Re-delaying into a full band scores its ceiling.",
             (add("a", delay=9000), ChangeDelay("1", 5000, T)), ("band-bump",),
             given={"delayed": zset([("top", F * S + 4095)])}),
        Case("twice-same-target", "Two changes to one new fire time: F2*4096, then F2*4096+1.",
             (add("a", delay=5000), ChangeDelay("1", 8000, T), ChangeDelay("1", 8000, T)),
             ("band-bump",)),
        Case("prioritized-job", "changeDelay of a prioritized job returns -3 and writes nothing.",
             (add("a", priority=2), ChangeDelay("1", 1000, T)),
             ("return-code", "no-side-effects")),
        Case("active-job", "changeDelay of an active job returns -3 and writes nothing.",
             (add("a"), fetch(T), ChangeDelay("1", 1000, T)), ("return-code", "no-side-effects")),
        Case("member-without-hash", "A delayed member with no job hash gives -1 and stays put.",
             (ChangeDelay("ghost", 1000, T),), ("return-code", "no-side-effects"),
             given={"delayed": zset([("ghost", F * S)])}),
        Case("keeps-priority",
             "A re-delayed job keeps priority 3 and is promoted into prioritized.",
             (add("a", delay=5000, priority=3), ChangeDelay("1", 1000, T), fetch(T + 1000)),
             ("from-now",)),
        Case("promoted-at-new-time", "After changeDelay(2000) the job is promoted at T+2000.",
             (add("a", delay=5000), ChangeDelay("1", 2000, T), fetch(T + 2000)), ("from-now",)),
        Case("not-promoted-before",
             "After changeDelay(8000) a fetch at the old fire time finds none.",
             (add("a", delay=5000), ChangeDelay("1", 8000, T), fetch(F)), ("from-now",)),
        Case("zero-then-fetch-now", "changeDelay(0) at now makes the job due at that very ms.",
             (add("a", delay=5000), ChangeDelay("1", 0, T + 300), fetch(T + 300)),
             ("from-now",)),
        Case("one-year", "A one-year changeDelay scores (now+31536000000)*4096 exactly.",
             (add("a", delay=5000), ChangeDelay("1", 31_536_000_000, T)), ("from-now",)),
        Case("precision-edge", "changeDelay to F = 2^41 scores 2^53.",
             (add("a", delay=5000), ChangeDelay("1", 2**41 - T, T)), ("precision",)),
        Case("head-leaves-integer-wake", "Moving the head away makes marker 1 the next head's F.",
             (add("a", delay=5000), add("b", delay=7000), ChangeDelay("1", 9000, T)),
             ("marker",)),
        Case("no-base-marker", "changeDelay writes no marker 0 even with jobs waiting.",
             (add("w"), add("a", delay=5000), ChangeDelay("2", 1000, T)), ("marker",),
             given={"marker": zset([("1", 1)])}),
        Case("paused-still-wakes", "changeDelay on a paused queue still writes marker 1.",
             (add("a", delay=5000), Pause(), ChangeDelay("1", 1000, T)), ("marker",)),
        Case("custom-id", "changeDelay finds a custom-id job at BASE + id.",
             (add("a", delay=5000, job_id="invoice-9"), ChangeDelay("invoice-9", 100, T)),
             ("from-now",)),
        Case("seeded-job", "changeDelay of a seeded delayed job writes delay, event and marker.",
             (ChangeDelay("s", 250, T + 50),), ("from-now", "marker"),
             given={"delayed": zset([("s", F * S)]), "s": job_hash({"delay": "5000"}),
                    "meta": job_hash({"opts.maxLenEvents": "10000"})}),
        Case("fetch-returns-new-next", "With nothing ready, a fetch returns the changed fire time.",
             (add("a", delay=5000), ChangeDelay("1", 12_345, T), fetch(T)), ("from-now",)),
    ]


AREA = Area(
    "change-delay",
    "changeDelay(id, delay, now): the new score from now + delay with the band bump, the delay "
    "field, the delayed event, marker \"1\", and the -1/-3 codes.",
    NOTES,
    tuple(_cases()),
    rule=(
        "changeDelay(id, delay, now) re-scores a delayed job at `F = now + delay` (the "
        "job's own timestamp plays no part) with the band bump, computed before the job "
        "leaves its band. It sets the hash field `delay`, emits `delayed` with the absolute "
        'F, and recomputes marker "1" from the delayed head. It returns 0; -1 when the job '
        "hash is missing, -3 when the job is not in delayed, and then writes nothing."
    ),
)
