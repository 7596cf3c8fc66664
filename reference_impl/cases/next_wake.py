"""next-wake: marker members "0" (ready now) and "1" (delayed head / 4096, not floored)."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, S, T, add, fetch, job_hash, wait_list, zset
from reference_impl.ops import ChangeDelay, MoveToDelayed, Pause, Promote, Resume

NOTES = {
    "marker-split": Flag(
        "wake-marker",
        "Base marker \"0\" (score 0) and delayed marker \"1\" are separate members.",
        ("https://github.com/taskforcesh/bullmq/pull/2389",),
    ),
    "wake-division": Flag(
        "wake-marker",
        "The next wake is head/4096: marker \"1\" holds it, moveToActive returns it truncated.",
        ("https://github.com/taskforcesh/bullmq/pull/204",),
    ),
    "fractional": Flag(
        "wake-marker", "Marker \"1\" is not floored: a bumped head gives F + k/4096."
    ),
    "head-tracking": Flag(
        "wake-marker", "Delayed writes recompute marker \"1\" from the head; it can go down or up."
    ),
    "stale-after-promotion": Flag(
        "wake-marker", "Promotion does not refresh or remove marker \"1\"."
    ),
    "activation-marker": Flag("wake-marker", "Activating a job always sets marker \"0\"."),
    "paused": Flag(
        "pause", "Paused or maxed queues get no \"0\" from adds; \"1\" is still written."
    ),
}

F = T + 5000


def _cases() -> list[Case]:
    return [
        Case("earlier-job-lowers-wake", "A delayed add due earlier moves marker 1 down.",
             (add("a", delay=9000), add("b", delay=5000)), ("head-tracking",)),
        Case("later-job-keeps-wake", "A delayed add due later leaves marker 1 at the head.",
             (add("a", delay=5000), add("b", delay=9000)), ("head-tracking",)),
        Case("standard-then-delayed", "A standard then a delayed add: marker 0 and 1 coexist.",
             (add("w"), add("d", delay=5000)), ("marker-split",)),
        Case("delayed-then-standard", "A delayed then a standard add: marker 1 is kept.",
             (add("d", delay=5000), add("w")), ("marker-split",)),
        Case("prioritized-and-delayed", "A prioritized and a delayed add set both markers.",
             (add("p", priority=2), add("d", delay=5000)), ("marker-split",)),
        Case("fractional-after-head-moves", "With the head at F*4096+1, marker 1 is F + 1/4096.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=5000),
              ChangeDelay("1", 10000, T)), ("fractional",)),
        Case("fetch-returns-truncated-wake", "moveToActive returns F when marker 1 is F + 1/4096.",
             (add("a", delay=5000), add("b", delay=5000), ChangeDelay("1", 10000, T), fetch(T)),
             ("fractional", "wake-division")),
        Case("fractional-third-in-band", "A head at F*4096+2 gives marker 1 = F + 2/4096.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=5000),
              ChangeDelay("1", 9000, T), ChangeDelay("2", 9000, T)), ("fractional",)),
        Case("fetch-nothing-returns-next", "A fetch with only future jobs returns the head's F.",
             (add("a", delay=5000), fetch(T)), ("wake-division",)),
        Case("fetch-empty-queue", "A fetch on an empty queue returns no job and next 0.",
             (fetch(T),), ("wake-division",)),
        Case("stale-after-promotion", "After its job is promoted, marker 1 still holds the past F.",
             (add("a", delay=5000), fetch(F + 1000)), ("stale-after-promotion",)),
        Case("stale-while-delayed-remain", "Promoting the head leaves marker 1 at the old head.",
             (add("a", delay=5000), add("b", delay=9000), fetch(F)),
             ("stale-after-promotion",)),
        Case("promote-op-keeps-wake", "promote(id) does not refresh marker 1.",
             (add("a", delay=5000), add("b", delay=9000), Promote("1")),
             ("stale-after-promotion",)),
        Case("change-delay-raises-wake", "changeDelay of the only job to later raises marker 1.",
             (add("a", delay=5000), ChangeDelay("1", 20000, T)), ("head-tracking",)),
        Case("change-delay-lowers-wake", "changeDelay of a job to earlier lowers marker 1.",
             (add("a", delay=5000), add("b", delay=9000), ChangeDelay("2", 1000, T)),
             ("head-tracking",)),
        Case("activation-sets-marker-0", "Activating a seeded waiting job writes marker 0.",
             (fetch(T),), ("activation-marker",),
             given={"wait": wait_list("1"),
                    "1": job_hash({"name": "a", "priority": "0", "delay": "0"})}),
        Case("paused-standard-no-marker", "A standard add on a paused queue writes no marker 0.",
             (add("a"),), ("paused",), given={"meta": job_hash({"paused": "1"})}),
        Case("paused-delayed-writes-wake", "A delayed add on a paused queue still writes marker 1.",
             (add("a", delay=5000),), ("paused",), given={"meta": job_hash({"paused": "1"})}),
        Case("maxed-no-marker", "With active at the concurrency limit, an add writes no marker 0.",
             (add("a"),), ("paused",),
             given={"meta": job_hash({"concurrency": "1"}),
                    "active": wait_list("busy")}),
        Case("wake-from-seeded-head",
             "A delayed add recomputes marker 1 from a seeded bumped head.",
             (add("a", delay=9000),), ("fractional", "head-tracking"),
             given={"delayed": zset([("h", F * S + 3)])}),
        Case("paused-fetch-returns-zero", "A paused fetch returns next 0 even with delayed jobs.",
             (add("a", delay=5000), fetch(T)), ("paused",),
             given={"meta": job_hash({"paused": "1"})}),
        Case("change-non-head-keeps-wake", "changeDelay of a non-head job to later keeps marker 1.",
             (add("a", delay=5000), add("b", delay=9000), ChangeDelay("2", 20000, T)),
             ("head-tracking",)),
        Case("stale-wake-refreshed-by-add",
             "After promotion, the next delayed add resets marker 1.",
             (add("a", delay=5000), fetch(F), add("b", delay=9000)),
             ("stale-after-promotion", "head-tracking")),
        Case("retry-earlier-lowers-wake",
             "A retry due before the delayed head moves marker 1 down.",
             (add("d", delay=9000), add("w"), fetch(T), MoveToDelayed("2", T + 10, 1000)),
             ("head-tracking",)),
        Case("retry-later-keeps-wake", "A retry due after the delayed head leaves marker 1 alone.",
             (add("d", delay=5000), add("w"), fetch(T), MoveToDelayed("2", T + 10, 60_000)),
             ("head-tracking",)),
        Case("retry-bumped-head-fraction",
             "A retry bumped behind the head becomes head at F+1/4096.",
             (add("d", delay=5000), add("w"), fetch(T), MoveToDelayed("2", T, 5000),
              ChangeDelay("1", 9000, T)), ("fractional", "head-tracking")),
        Case("fetch-next-after-retry",
             "After its only job is retried, a fetch returns the retry F.",
             (add("w"), fetch(T), MoveToDelayed("1", T + 20, 3000), fetch(T + 20)),
             ("wake-division",)),
        Case("pause-drops-both-markers", "Pausing deletes marker 0 and marker 1 together.",
             (add("w"), add("d", delay=5000), Pause()), ("paused", "marker-split")),
        Case("resume-waiting-writes-only-0", "Resume with waiting jobs writes marker 0, not 1.",
             (add("w"), add("d", delay=5000), Pause(), Resume()), ("paused", "marker-split")),
        Case("resume-delayed-only-writes-1",
             "Resume with only delayed jobs writes marker 1 = head F.",
             (add("d", delay=5000), Pause(), Resume()), ("paused", "wake-division")),
        Case("resume-fractional-head", "Resume recomputes marker 1 from a bumped head: F + 1/4096.",
             (add("a", delay=5000), add("b", delay=5000), ChangeDelay("1", 9000, T), Pause(),
              Resume()), ("paused", "fractional")),
        Case("promote-head-then-next",
             "After the head is promoted and fetched, next is the new head.",
             (add("a", delay=5000), add("b", delay=7000), Promote("1"), fetch(T), fetch(T)),
             ("stale-after-promotion", "wake-division")),
        Case("retry-refreshes-stale-wake", "A retry after a promotion replaces the stale marker 1.",
             (add("a", delay=5000), fetch(F), MoveToDelayed("1", F, 2000)),
             ("stale-after-promotion", "head-tracking")),
        Case("resume-empty-queue-no-marker", "Resume on an empty queue writes no marker at all.",
             (Pause(), Resume()), ("paused",)),
        Case("fetch-skips-legacy-marker",
             "A fetch drops a legacy \"0:\" id from wait and takes the next job.",
             (fetch(T),), ("activation-marker",),
             given={"wait": wait_list("w", f"0:{F}"), "w": job_hash({"name": "w"})}),
    ]


AREA = Area(
    "next-wake",
    "Wake-up markers: member \"0\" at score 0 when work is ready, member \"1\" at the delayed "
    "head / 4096, and the next fire time moveToActive returns.",
    NOTES,
    tuple(_cases()),
    example="standard-then-delayed",
    rule=(
        'The marker zset wakes workers: member "0" at score 0 when a job is ready, member '
        '"1" at score `head / 4096` (not floored), where head is the lowest delayed score. '
        "When moveToActive finds nothing ready it returns the next fire time `trunc(head / "
        "4096)`."
    ),
)
