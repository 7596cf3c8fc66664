"""promote-range: the sweep takes scores 0..(now+1)*4096-1, at most 1000, in score order."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, S, T, add, fetch, job_hash, wait_list, zset
from reference_impl.ops import Promote

NOTES = {
    "promote-bound": Flag(
        "boundary",
        "The sweep bound is (now+1)*4096-1: the whole band of now, not the next band's floor.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v5.8.6",),
    ),
    "pre-5.8.6": Flag(
        "older-protocol", "Before v5.8.6 the bound was (now+1)*4096 and caught the next floor.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v5.8.6",),
    ),
    "batch-limit": Flag("boundary", "One sweep moves at most 1000 jobs."),
    "promote-order": Flag(
        "placement", "Promoted jobs are LPUSHed in score order, behind jobs already waiting."
    ),
    "promote-writes": Flag(
        "missing-write", "Promotion writes `waiting ... prev delayed`, sets delay=0 and marker 0."
    ),
    "promote-priority": Flag(
        "placement", "A promoted job with priority goes to prioritized with a fresh pc."
    ),
    "paused": Flag("pause", "Paused or maxed queues still promote but fetch nothing."),
    "promote-op": Flag("placement", "promote(id) moves one delayed job now, or returns -3."),
    "lower-bound": Flag("boundary", "The sweep range starts at score 0."),
}

F = T + 5000


def _seeded(count: int, fire: int = F) -> dict[str, object]:
    return {"delayed": zset([(f"d{i}", fire * S + i % S) for i in range(count)])}


def _cases() -> list[Case]:
    return [
        Case("due-at-now-included", "A job whose fire time equals now is promoted and fetched.",
             (add("a", delay=5000), fetch(F)), ("promote-bound",)),
        Case("due-at-now-plus-1-excluded", "A job due at now+1 stays delayed.",
             (add("a", delay=5000), fetch(F - 1)), ("promote-bound",)),
        Case("band-ceiling-of-now-included", "Score (now+1)*4096-1 is promoted at now.",
             (fetch(F),), ("promote-bound",),
             given={"delayed": zset([("c", F * S + 4095)])}),
        Case("next-band-floor-excluded", "Score (now+1)*4096 is not promoted at now.",
             (fetch(F),), ("promote-bound", "pre-5.8.6"),
             given={"delayed": zset([("n", (F + 1) * S)])}),
        Case("bumped-jobs-promoted-together", "All bumped members of now's band are promoted.",
             (add("a", delay=5000), add("b", delay=5000), add("c", delay=5000), fetch(F)),
             ("promote-bound",)),
        Case("overdue-included", "A job due an hour ago is promoted.",
             (add("a", T - 3_600_000, delay=1), fetch(T)), ("promote-bound",)),
        Case("negative-score-excluded", "A member with score -1 is below the range and stays.",
             (fetch(F),), ("lower-bound",), given={"delayed": zset([("neg", -1), ("z", 0)])}),
        Case("exactly-1000-due", "1000 due jobs are all promoted by one fetch.",
             (fetch(F),), ("batch-limit",), given=_seeded(1000)),
        Case("1001-due", "With 1001 due jobs one fetch promotes 1000 and leaves the last.",
             (fetch(F),), ("batch-limit",), given=_seeded(1001)),
        Case("wait-before-promoted", "Promoted jobs queue behind waiting ones: wait [4,3,1].",
             (add("normal"), add("x", delay=9000), add("a", delay=5000), add("b", delay=5000),
              fetch(F)), ("promote-order",)),
        Case("earliest-due-fetched-first", "With wait empty, the earliest promoted job runs first.",
             (add("late", delay=5000), add("early", delay=2000), fetch(F)), ("promote-order",)),
        Case("sweep-across-bands", "Jobs from several past bands are promoted in score order.",
             (add("a", delay=3000), add("b", delay=1000), add("c", delay=2000),
              add("d", delay=1000), fetch(F)), ("promote-order",)),
        Case("promote-writes", "Promotion emits waiting prev delayed and resets delay to 0.",
             (add("a", delay=5000), add("w"), fetch(F)), ("promote-writes",)),
        Case("promoted-prioritized", "A promoted job with priority 2 gets a fresh pc score.",
             (add("p", priority=2), add("a", delay=5000, priority=2), fetch(F)),
             ("promote-priority",)),
        Case("hashless-member", "A member without a hash goes to wait; delay=0 creates a hash.",
             (fetch(F),), ("promote-writes",), given={"delayed": zset([("ghost", F * S)])}),
        Case("paused-promotes-no-fetch", "Paused: due jobs move to wait, nothing is fetched.",
             (add("a", delay=5000), fetch(F)), ("paused",),
             given={"meta": job_hash({"paused": "1", "opts.maxLenEvents": "10000"})}),
        Case("maxed-promotes-no-fetch", "Concurrency reached: jobs promote, no marker 0, no fetch.",
             (fetch(F),), ("paused",),
             given={"meta": job_hash({"concurrency": "1"}),
                    "active": wait_list("busy"),
                    "delayed": zset([("d", F * S)]), "d": job_hash({"priority": "0"})}),
        Case("nothing-due-nothing-moves", "A fetch with nothing due changes no delayed job.",
             (add("a", delay=5000), add("b", delay=6000), fetch(T)), ("promote-bound",)),
        Case("promote-op", "promote(id) LPUSHes the job, emits waiting, resets delay.",
             (add("w"), add("a", delay=5000), Promote("2")), ("promote-op",)),
        Case("promote-op-twice", "A second promote of the same job returns -3.",
             (add("a", delay=5000), Promote("1"), Promote("1")), ("promote-op",)),
        Case("promote-op-not-delayed", "promote of a waiting job returns -3.",
             (add("a"), Promote("1")), ("promote-op",)),
        Case("promote-op-missing", "promote of an unknown id returns -3.",
             (Promote("404"),), ("promote-op",)),
        Case("promote-op-prioritized", "promote of a delayed job with priority 4 prioritizes it.",
             (add("a", delay=5000, priority=4), Promote("1")), ("promote-op", "promote-priority")),
        Case("promote-op-far-future", "promote ignores the fire time of the job.",
             (add("a", delay=31_536_000_000), Promote("1")), ("promote-op",)),
        Case("promote-op-paused", "promote on a paused queue moves the job but adds no marker 0.",
             (add("a", delay=5000), Promote("1")), ("promote-op", "paused"),
             given={"meta": job_hash({"paused": "1"})}),
        Case("promote-op-hashless", "promote of a member without a hash LPUSHes it; delay=0 "
             "creates the hash.", (Promote("ghost"),), ("promote-op",),
             given={"delayed": zset([("ghost", F * S)])}),
        Case("lifo-promoted-with-lpush", "A delayed lifo job is LPUSHed when promoted.",
             (add("w"), add("a", delay=5000, lifo=True), fetch(F)), ("promote-order",)),
    ]


AREA = Area(
    "promote-range",
    "Promotion: the moveToActive sweep range and batch, where promoted jobs go, and "
    "promote(id).",
    NOTES,
    tuple(_cases()),
    rule=(
        "Every fetch first promotes the due delayed jobs, scores 0 to `(now + 1) * 4096 - "
        "1`, at most 1000 per call. Each is LPUSHed to wait in score order (or goes to "
        "prioritized with a fresh `pc`), with `delay = 0`, `waiting prev delayed` and "
        'marker "0" unless the queue is paused or maxed (it still promotes then).'
    ),
)
