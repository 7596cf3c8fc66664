"""change-priority: changePriority-7 re-queues waiting/prioritized jobs and always sets the field.

priority_order.py already pins the basic moves (wait to prioritized, re-score, lifo front of
tier, priority 0 back to wait, delayed/active field only, paused, missing). These cases add the
counter states, the marker and counter side effects, duplicates, and the fetch order.
"""

from __future__ import annotations

from reference_impl.cases import (
    Area,
    Case,
    Flag,
    T,
    add,
    fetch,
    job_hash,
    string,
    wait_list,
    zset,
)
from reference_impl.ops import ChangePriority, Promote

NOTES = {
    "fresh-counter": Flag(
        "score",
        "A non-lifo re-score takes a fresh INCR pc; the old counter is never reused, so the job "
        "goes to the back of its new tier.",
        ("https://github.com/taskforcesh/bullmq/pull/1984",),
    ),
    "counter-state": Flag(
        "score",
        "The fresh counter follows pc wherever it is: absent (c=1), reset by a drained fetch, "
        "or at 2^32-1 (c mod 2^32 = 0).",
    ),
    "lifo-front": Flag(
        "placement",
        "changePriority with lifo and P>0 scores exactly P*2^32: no INCR pc and no marker; ties "
        "at that score order by member bytes.",
    ),
    "to-wait": Flag(
        "placement",
        "Priority 0 LREMs/ZREMs the job and LPUSHes it to wait (RPUSH with lifo), with marker 0.",
    ),
    "field-only": Flag(
        "placement",
        "Jobs that are neither waiting nor prioritized only get the priority field written.",
    ),
    "marker": Flag(
        "wake-marker",
        "A fresh-counter re-score or a move to wait writes marker \"0\" unless paused or maxed.",
    ),
    "paused": Flag(
        "pause", "Paused or maxed queues get no marker 0 from changePriority."
    ),
    "fetch-order": Flag(
        "placement",
        "After re-prioritizing, plain jobs still run first, then prioritized by score.",
    ),
    "priority-limit": Flag(
        "score", "A re-score to 2^21-1 keeps its counter bits exactly."
    ),
    "lrem-count": Flag(
        "placement", "The wait removal is LREM wait -1 id: only the right-most copy goes."
    ),
    "return-code": Flag(
        "precondition", "A missing job hash returns -1 and nothing is written."
    ),
    "promote-priority": Flag(
        "placement", "Promotion reads the priority field, so a changed priority is used."
    ),
}

LIMIT = 2**21 - 1
TIER = 2**32
F = T + 5000


def _job(priority: int = 0, **extra: str) -> dict[str, object]:
    return job_hash({"name": "j", "delay": "0", "priority": str(priority), **extra})


def _cases() -> list[Case]:
    return [
        # --- a waiting job gets a fresh counter, whatever state pc is in ---
        Case("wait-pc-absent", "A waiting job re-scored to 2 with no pc key scores 2^33+1; pc=1.",
             (ChangePriority("a", 2),), ("counter-state", "marker"),
             given={"wait": wait_list("a"), "a": _job()}),
        Case("wait-pc-after-reset", "After a drained fetch deleted pc, a re-score takes counter 1.",
             (add("p", priority=1), fetch(T), fetch(T), add("w"), ChangePriority("2", 5)),
             ("counter-state",)),
        Case("wait-pc-at-wrap",
             "With pc at 2^32-1 a waiting job re-scored to 3 scores exactly 3*2^32.",
             (ChangePriority("a", 3),), ("counter-state",),
             given={"wait": wait_list("a"), "a": _job(), "pc": string(str(TIER - 1))}),
        Case("rescore-wrap-jumps-tier", "A re-score that wraps pc to 0 is fetched before its tier.",
             (add("x", priority=3), add("y", priority=1), ChangePriority("2", 3), fetch(T)),
             ("counter-state", "fetch-order"), given={"pc": string(str(TIER - 3))}),
        Case("wait-fetched-after-plain", "A waiting job moved to priority 1 runs after plain jobs.",
             (add("w1"), add("w2"), ChangePriority("1", 1), fetch(T), fetch(T)),
             ("fetch-order",)),
        # --- prioritized jobs: the old counter is never reused ---
        Case("counter-not-reused", "Tier 3 to 2 after two tier-2 adds scores 2*2^32+4, not +1.",
             (add("a", priority=3), add("b", priority=2), add("c", priority=2),
              ChangePriority("1", 2), fetch(T)), ("fresh-counter",)),
        Case("lower-tier-behind-earlier",
             "A job moved down to tier 5 is fetched after tier 5's jobs.",
             (add("a", priority=1), add("b", priority=5), add("c", priority=5),
              ChangePriority("1", 5), fetch(T), fetch(T), fetch(T)),
             ("fresh-counter", "fetch-order")),
        Case("twice-two-counters", "Two changePriority calls on one job take counters 1 and 2.",
             (ChangePriority("a", 2), ChangePriority("a", 2)), ("fresh-counter",),
             given={"wait": wait_list("a"), "a": _job()}),
        Case("fetch-after-swaps", "Tiers 1,2,3 with 1->3 and 3->1 fetch as c, b, a.",
             (add("a", priority=1), add("b", priority=2), add("c", priority=3),
              ChangePriority("1", 3), ChangePriority("3", 1), fetch(T), fetch(T), fetch(T)),
             ("fresh-counter", "fetch-order")),
        Case("limit-exact", "Re-scoring to 2^21-1 with pc=5 gives (2^21-1)*2^32+6 exactly.",
             (ChangePriority("a", LIMIT),), ("priority-limit",),
             given={"prioritized": zset([("a", TIER + 5)]), "a": _job(1), "pc": string("5")}),
        # --- lifo: exactly P*2^32, no INCR, no marker ---
        Case("lifo-from-wait-no-incr",
             "lifo re-score of a waiting job: 4*2^32, pc stays 7, no marker.",
             (ChangePriority("a", 4, lifo=True),), ("lifo-front",),
             given={"wait": wait_list("a"), "a": _job(), "pc": string("7")}),
        Case("lifo-ahead-of-tier", "lifo re-score from tier 3 to 1 lands at 2^32, ahead of tier 1.",
             (ChangePriority("b", 1, lifo=True),), ("lifo-front",),
             given={"prioritized": zset([("a", TIER + 1), ("b", 3 * TIER + 2)]),
                    "a": _job(1), "b": _job(3), "pc": string("2")}),
        Case("lifo-ties-by-member",
             "Two lifo re-scores to tier 3 tie at 3*2^32; member a sorts first.",
             (add("x", priority=5, job_id="b"), add("y", priority=5, job_id="a"),
              ChangePriority("b", 3, lifo=True), ChangePriority("a", 3, lifo=True), fetch(T)),
             ("lifo-front",)),
        Case("lifo-pc-stays-absent",
             "lifo re-score at 2^21-1 writes (2^21-1)*2^32 and creates no pc.",
             (ChangePriority("a", LIMIT, lifo=True),), ("lifo-front", "priority-limit"),
             given={"wait": wait_list("a"), "a": _job()}),
        # --- priority 0: back to wait ---
        Case("zero-from-wait-to-back",
             "changePriority(0) of the next waiting job LPUSHes it to the back.",
             (ChangePriority("b", 0),), ("to-wait", "marker"),
             given={"wait": wait_list("a", "b"), "a": _job(), "b": _job()}),
        Case("zero-from-wait-lifo-next",
             "changePriority(0, lifo) RPUSHes a waiting job to be fetched next.",
             (ChangePriority("a", 0, lifo=True), fetch(T)), ("to-wait",),
             given={"wait": wait_list("a", "b", "c"), "a": _job(), "b": _job(), "c": _job()}),
        Case("zero-writes-marker-keeps-pc", "changePriority(0) writes marker 0; pc is left at 9.",
             (ChangePriority("a", 0),), ("to-wait", "marker"),
             given={"prioritized": zset([("a", 2 * TIER + 9)]), "a": _job(2), "pc": string("9")}),
        # --- field only, and paused/maxed ---
        Case("completed-field-only", "A completed job gets priority 7; completed is untouched.",
             (ChangePriority("a", 7),), ("field-only",),
             given={"completed": zset([("a", T)]), "a": _job(3, finishedOn=str(T))}),
        Case("active-prioritized-no-incr", "An active job once prioritized: field 1, pc stays 1.",
             (add("a", priority=3), fetch(T), ChangePriority("1", 1)), ("field-only",)),
        Case("paused-wait-to-prioritized", "Paused: a waiting job gets a fresh pc but no marker 0.",
             (ChangePriority("a", 2),), ("paused",),
             given={"wait": wait_list("a"), "a": _job(), "meta": job_hash({"paused": "1"})}),
        Case("maxed-wait-to-prioritized",
             "Concurrency reached: re-score takes pc, writes no marker 0.",
             (ChangePriority("a", 2),), ("paused",),
             given={"wait": wait_list("a"), "a": _job(), "active": wait_list("busy"),
                    "meta": job_hash({"concurrency": "1"})}),
        # --- delayed: the new priority is used on promotion ---
        Case("delayed-then-promote", "A delayed job re-set to priority 4 is promoted to 4*2^32+1.",
             (add("a", delay=5000), ChangePriority("1", 4), Promote("1")),
             ("field-only", "promote-priority")),
        Case("delayed-zero-then-sweep", "A priority-2 delayed job set to 0 is swept into wait.",
             (add("a", delay=5000, priority=2), ChangePriority("1", 0), fetch(F)),
             ("field-only", "promote-priority")),
        # --- edge cases ---
        Case("hashless-id-minus-1", "An id in wait without a hash returns -1; nothing is written.",
             (ChangePriority("ghost", 3),), ("return-code",),
             given={"wait": wait_list("ghost")}),
        Case("duplicate-in-wait", "With id a twice in wait, only the right-most copy is removed.",
             (ChangePriority("a", 2),), ("lrem-count",),
             given={"wait": wait_list("a", "x", "a"), "a": _job(), "x": _job()}),
    ]


AREA = Area(
    "change-priority",
    "changePriority: fresh counters in every pc state, lifo at P*2^32, priority 0 back to wait, "
    "the field in every state, markers, and fetch order afterwards.",
    NOTES,
    tuple(_cases()),
    rule=(
        "changePriority(id, P, lifo) on a waiting or prioritized job: with P > 0 the job is "
        "re-scored `P * 2^32 + (INCR pc) mod 2^32`, a fresh counter, so it goes to the back "
        "of its tier; with lifo it is scored exactly `P * 2^32`, with no INCR and no "
        "marker; with P = 0 it goes back to wait (LPUSH, or RPUSH with lifo). The "
        "`priority` field is written in every state. A fresh-counter re-score or a move to "
        'wait writes marker "0" unless the queue is paused or maxed. A missing job gives '
        "-1."
    ),
)
