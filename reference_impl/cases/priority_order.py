"""priority-order: scores P*2^32 + (INCR pc) mod 2^32, and the fetch order of moveToActive."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, T, add, fetch, job_hash, string
from reference_impl.ops import ChangePriority

NOTES = {
    "priority-score": Flag("score", "Prioritized score is P*2^32 + (INCR pc) mod 2^32."),
    "shared-counter": Flag("score", "One pc counter serves every priority tier."),
    "priority-limit": Flag(
        "score",
        "2^21-1 is the largest exact priority; above it the counter bits round away.",
    ),
    "counter-wrap": Flag("score", "pc is taken mod 2^32, so FIFO breaks at the wrap."),
    "pc-reset": Flag(
        "score", "pc is deleted when a fetch finds wait and prioritized both empty."
    ),
    "fetch-order": Flag(
        "placement", "moveToActive takes wait first; prioritized only when wait is empty."
    ),
    "v4-layout": Flag(
        "older-protocol",
        "Since v4 priorities live in the prioritized zset; no priority zset, no LINSERT.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v4.0.0",),
    ),
    "lifo": Flag("placement", "lifo RPUSHes standard jobs and is ignored by prioritized adds."),
    "change-priority": Flag(
        "placement",
        "changePriority re-queues waiting/prioritized jobs and always writes the field.",
        ("https://github.com/taskforcesh/bullmq/pull/1901",),
    ),
    "paused": Flag("pause", "Paused queues get no marker 0 from adds."),
    "return-code": Flag("precondition", "Scripts return Node ErrorCode values (-1)."),
}

LIMIT = 2**21 - 1


def _cases() -> list[Case]:
    return [
        Case("priority-1", "Priority 1 with pc=1 scores 2^32+1.",
             (add("a", priority=1),), ("priority-score", "v4-layout")),
        Case("priority-2", "Priority 2 with pc=1 scores 2^33+1.",
             (add("a", priority=2),), ("priority-score",)),
        Case("priority-limit", "Priority 2^21-1 scores 2^53-2^32+1 exactly.",
             (add("a", priority=LIMIT),), ("priority-limit",)),
        Case("priority-limit-max-counter", "Priority 2^21-1 with pc=2^32-1 scores 2^53-1.",
             (add("a", priority=LIMIT),), ("priority-limit",),
             given={"pc": string(str(2**32 - 2))}),
        Case("above-limit-counter-lost", "Priority 2^21 with pc=1 rounds to 2^53.",
             (add("a", priority=2**21),), ("priority-limit",)),
        Case("shared-counter-1-5-1", "Priorities 1, 5, 1 get counters 1, 2, 3.",
             (add("a", priority=1), add("b", priority=5), add("c", priority=1)),
             ("shared-counter",)),
        Case("fifo-in-tier-interleaved", "Tiers 1,2,1,2 fetch as 1a, 1b, 2a, 2b.",
             (add("1a", priority=1), add("2a", priority=2), add("1b", priority=1),
              add("2b", priority=2), fetch(T), fetch(T), fetch(T), fetch(T)),
             ("shared-counter", "fetch-order")),
        Case("lower-number-first", "Priority 1 is fetched before priority 10 added earlier.",
             (add("p10", priority=10), add("p1", priority=1), fetch(T)), ("priority-score",)),
        Case("three-tiers", "Tiers 3, 1, 2 added in that order fetch as 1, 2, 3.",
             (add("p3", priority=3), add("p1", priority=1), add("p2", priority=2),
              fetch(T), fetch(T), fetch(T)), ("fetch-order",)),
        Case("plain-before-prioritized", "A plain job added after a prioritized one runs first.",
             (add("p", priority=1), add("plain"), fetch(T)), ("fetch-order",)),
        Case("mixed-fetch-sequence", "All plain jobs drain before any prioritized job.",
             (add("p2", priority=2), add("w1"), add("p1", priority=1), add("w2"),
              fetch(T), fetch(T), fetch(T), fetch(T)), ("fetch-order",)),
        Case("counter-wrap", "pc 2^32-1 then 2^32: the second job scores P*2^32 and jumps ahead.",
             (add("a", priority=1), add("b", priority=1)), ("counter-wrap",),
             given={"pc": string(str(2**32 - 2))}),
        Case("counter-at-max", "With pc at 2^32-1 the next job takes counter 0.",
             (add("a", priority=7),), ("counter-wrap",), given={"pc": string(str(2**32 - 1))}),
        Case("wrap-breaks-fifo", "After the wrap the newer job of the tier is fetched first.",
             (add("a", priority=1), add("b", priority=1), fetch(T)), ("counter-wrap",),
             given={"pc": string(str(2**32 - 2))}),
        Case("pc-deleted-when-drained", "A fetch finding nothing deletes pc.",
             (add("a", priority=1), fetch(T), fetch(T)), ("pc-reset",)),
        Case("pc-kept-while-prioritized", "pc stays while prioritized jobs remain.",
             (add("a", priority=1), add("b", priority=1), fetch(T)), ("pc-reset",)),
        Case("pc-kept-while-wait-has-jobs", "A fetch served from wait leaves pc alone.",
             (add("a", priority=1), add("w"), fetch(T)), ("pc-reset",)),
        Case("pc-deleted-on-last-pop",
             "Popping the last prioritized job keeps pc; next fetch drops it.",
             (add("a", priority=1), fetch(T)), ("pc-reset",)),
        Case("pc-restarts-at-1", "After pc is deleted the next prioritized job gets counter 1.",
             (add("a", priority=1), fetch(T), fetch(T), add("b", priority=3)), ("pc-reset",)),
        Case("lifo-ignored-when-prioritized", "lifo does not change a prioritized add.",
             (add("a", priority=2), add("b", priority=2, lifo=True)), ("lifo",)),
        Case("lifo-standard-rpush", "A lifo plain job is RPUSHed and fetched next.",
             (add("a"), add("b", lifo=True), fetch(T)), ("lifo",)),
        Case("priority-0-is-wait", "Priority 0 goes to wait with field priority 0.",
             (add("a", priority=0),), ("priority-score",)),
        Case("custom-id-prioritized", "A custom id is the prioritized member.",
             (add("a", priority=3, job_id="report-7"),), ("priority-score",)),
        Case("paused-no-marker", "A prioritized add on a paused queue writes no marker 0.",
             (add("a", priority=1),), ("paused",), given={"meta": job_hash({"paused": "1"})}),
        Case("change-wait-to-prioritized", "changePriority(3) on a waiting job takes a fresh pc.",
             (add("p", priority=1), add("w"), ChangePriority("2", 3)), ("change-priority",)),
        Case("change-rescore", "changePriority(1) re-scores a priority-5 job with a fresh pc.",
             (add("a", priority=5), add("b", priority=1), ChangePriority("1", 1)),
             ("change-priority",)),
        Case("change-same-priority-to-back",
             "Re-setting the same priority moves a job to the back.",
             (add("a", priority=2), add("b", priority=2), ChangePriority("1", 2), fetch(T)),
             ("change-priority",)),
        Case("change-lifo-front-of-tier", "changePriority(2, lifo) scores exactly 2*2^32.",
             (add("a", priority=2), add("b", priority=2), ChangePriority("2", 2, lifo=True)),
             ("change-priority", "lifo")),
        Case("change-to-zero", "changePriority(0) LPUSHes the job back to wait.",
             (add("w"), add("a", priority=4), ChangePriority("2", 0)), ("change-priority",)),
        Case("change-to-zero-lifo", "changePriority(0, lifo) RPUSHes the job to the front.",
             (add("w"), add("a", priority=4), ChangePriority("2", 0, lifo=True), fetch(T)),
             ("change-priority", "lifo")),
        Case("change-delayed-field-only", "changePriority of a delayed job only sets the field.",
             (add("a", delay=5000), ChangePriority("1", 6)), ("change-priority",)),
        Case("change-active-field-only", "changePriority of an active job only sets the field.",
             (add("a"), fetch(T), ChangePriority("1", 6)), ("change-priority",)),
        Case("change-paused-no-marker",
             "changePriority to wait on a paused queue adds no marker 0.",
             (add("a", priority=3), ChangePriority("1", 0)), ("change-priority", "paused"),
             given={"meta": job_hash({"paused": "1"})}),
        Case("change-missing", "changePriority of a missing job returns -1.",
             (ChangePriority("404", 1),), ("change-priority", "return-code")),
        Case("duplicate-takes-no-counter", "A duplicate custom id does not INCR pc.",
             (add("a", priority=2, job_id="x"), add("b", priority=2, job_id="x"),
              add("c", priority=2)), ("shared-counter",)),
    ]


AREA = Area(
    "priority-order",
    "Priority scores, the shared pc counter and its reset, fetch order, and changePriority.",
    NOTES,
    tuple(_cases()),
    rule=(
        "A job with priority P > 0 goes to the prioritized zset at score `P * 2^32 + (INCR "
        "pc) mod 2^32`, one `pc` counter shared by every tier; `2^21 - 1` is the largest "
        "exact priority. A fetch takes wait first, and the lowest prioritized score only "
        "when wait is empty; `pc` is deleted when a fetch finds both empty."
    ),
)
