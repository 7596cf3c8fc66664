"""band-bump: jobs that share a fire time share a 4096-score band, bumped by +1, saturating."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, S, T, add, string, zset
from reference_impl.ops import ChangeDelay

NOTES = {
    "band-bump": Flag(
        "score",
        "A job whose fire time already has jobs gets the band's highest score + 1.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v5.8.6",),
    ),
    "saturation": Flag(
        "score",
        "From the 4096th job of one millisecond on, every job gets the band ceiling; ties then "
        "order by member bytes.",
    ),
    "pre-5.8.6": Flag(
        "older-protocol",
        "Before v5.8.6 the low 12 bits held id & 0xfff; 6.x uses only the band bump.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v5.8.6",),
    ),
    "band-isolation": Flag("score", "Only scores inside [F*4096, (F+1)*4096-1] count."),
    "change-delay": Flag(
        "score",
        "changeDelay computes the score before removing the job, so it bumps past its old one.",
    ),
}

F = T + 5000


def _band(count: int, prefix: str = "s", fire: int = F) -> list[tuple[str, int]]:
    return [(f"{prefix}{i}", fire * S + i) for i in range(count)]


def _cases() -> list[Case]:
    return [
        Case("2-same-ms", "Two jobs with one fire time score F*4096 and F*4096+1.",
             (add("a", delay=5000), add("b", delay=5000)), ("band-bump",)),
        Case("3-same-ms", "Three jobs with one fire time score +0, +1, +2.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=5000)), ("band-bump",)),
        Case("4096-fills-band", "The 4096th job of a millisecond gets the ceiling F*4096+4095.",
             (add("a", delay=5000),), ("band-bump", "saturation"),
             given={"delayed": zset(_band(4095)), "id": string("4095")}),
        Case("4097-saturates", "The 4097th job of a millisecond also gets the ceiling.",
             (add("a", delay=5000),), ("saturation",),
             given={"delayed": zset(_band(4096)), "id": string("4096")}),
        Case("saturated-ties-by-bytes", "At the ceiling, members order by bytes: f4095 < j10 < j9.",
             (add("a", delay=5000, job_id="j9"), add("b", delay=5000, job_id="j10")),
             ("saturation",), given={"delayed": zset([("f4095", F * S + 4095)])}),
        Case("different-timestamps-same-fire", "(T, 5000) and (T+2000, 3000) share band T+5000.",
             (add("a", T, delay=5000), add("b", T + 2000, delay=3000)), ("band-bump",)),
        Case("three-ways-to-one-fire-time", "Three timestamp+delay pairs for one F bump in order.",
             (add("a", T, delay=5000), add("b", T + 1000, delay=4000),
              add("c", T + 4999, delay=1)), ("band-bump",)),
        Case("bump-from-top-not-count", "Bands bump from the top score, not the member count.",
             (add("a", delay=5000),), ("band-bump",),
             given={"delayed": zset([("s0", F * S), ("s7", F * S + 7)])}),
        Case("only-ceiling-occupied", "A band holding only its ceiling gives the ceiling again.",
             (add("a", delay=5000),), ("saturation",),
             given={"delayed": zset([("top", F * S + 4095)])}),
        Case("ceiling-minus-one", "From ceiling-1, the next two jobs both get the ceiling.",
             (add("a", delay=5000), add("b", delay=5000)), ("saturation",),
             given={"delayed": zset([("s", F * S + 4094)])}),
        Case("next-band-floor-ignored", "A job at (F+1)*4096 does not bump band F.",
             (add("a", delay=5000),), ("band-isolation",),
             given={"delayed": zset([("n", (F + 1) * S)])}),
        Case("previous-band-ceiling-ignored", "A job at F*4096-1 does not bump band F.",
             (add("a", delay=5000),), ("band-isolation",),
             given={"delayed": zset([("p", F * S - 1)])}),
        Case("adjacent-ms-independent", "Fire times F and F+1 both start at their band floor.",
             (add("a", delay=5000), add("b", delay=5001)), ("band-isolation",)),
        Case("interleaved-bands", "Adds alternating between F and F+1 bump each band separately.",
             (add("a", delay=5000), add("b", delay=5001), add("c", delay=5000),
              add("d", delay=5001)), ("band-isolation", "band-bump")),
        Case("custom-id-not-in-score", "A custom-id add with id counter 4095 scores F*4096.",
             (add("a", delay=5000, job_id="order-1"),), ("pre-5.8.6",),
             given={"id": string("4094")}),
        Case("auto-id-not-in-score", "Auto id 7 scores F*4096, not F*4096+7.",
             (add("a", delay=5000),), ("pre-5.8.6",), given={"id": string("6")}),
        Case("change-delay-own-band", "changeDelay into its own band gives F*4096+1.",
             (add("a", delay=5000), ChangeDelay("1", 5000, T)), ("change-delay",)),
        Case("change-delay-into-used-band", "changeDelay into another job's band bumps past it.",
             (add("a", delay=1000), add("b", delay=5000), ChangeDelay("1", 5000, T)),
             ("change-delay", "band-bump")),
        Case("gap-after-leaving", "A job leaving mid-band leaves a gap; new jobs go above the top.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=5000),
              ChangeDelay("2", 9000, T), add("d", delay=5000)), ("band-bump", "change-delay")),
        Case("saturation-stays-in-band", "A saturated band F does not push a job at F+1 up.",
             (add("a", delay=5001),), ("saturation", "band-isolation"),
             given={"delayed": zset([("f4095", F * S + 4095)])}),
    ]


AREA = Area(
    "band-bump",
    "Same-millisecond band bumps: each fire time owns 4096 scores; later jobs take top+1 and "
    "saturate at the ceiling.",
    NOTES,
    tuple(_cases()),
    rule=(
        "A delayed job with fire time F (ms) scores `F * 4096` when its band "
        "`[F*4096, F*4096 + 4095]` is empty, else the band's highest score + 1, saturating "
        "at the ceiling `F*4096 + 4095` (ties then order by member bytes). Scores outside "
        "the band never count."
    ),
)
