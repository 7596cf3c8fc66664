"""reschedule: moveToDelayed puts an active job back into delayed at F = now + delay.

Retries with backoff and Job.moveToDelayed(ts) both use it. The client computes the backoff and
passes it as the relative delay: fixed `delay`, exponential `2^(attempt-1) * delay`.
"""

from __future__ import annotations

from reference_impl.cases import (
    Area,
    Case,
    Flag,
    S,
    T,
    add,
    fetch,
    job_hash,
    stalled,
    string,
    wait_list,
    zset,
)
from reference_impl.ops import MoveToDelayed, Pause, Promote

NOTES = {
    "score-from-now": Flag(
        "score",
        "moveToDelayed scores from the caller's now: F = now + delay (only delay > 0 shifts), "
        "not from the job's timestamp or processedOn.",
    ),
    "band-bump": Flag(
        "score",
        "A retried job whose F already has jobs gets the band's highest score + 1, saturating "
        "at the ceiling; other bands do not count.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v5.8.6",),
    ),
    "backoff": Flag(
        "score",
        "The client computes the backoff and sends it as the relative delay: fixed = delay, "
        "exponential = 2^(attempt-1) * delay. A port that sends a wrong backoff makes Node "
        "workers retry almost at once.",
        ("https://github.com/bogardt/bullmq-rs/issues/23",),
    ),
    "attempts": Flag(
        "missing-write", "moveToDelayed does HINCRBY atm 1 unless skipAttempt is '1'."
    ),
    "hash-fields": Flag(
        "missing-write", "The job hash field `delay` is set to the relative delay sent (ARGV[5])."
    ),
    "leave-active": Flag(
        "placement",
        "The job leaves active with LREM active -1 (from the right); -3 when it is not there.",
    ),
    "lock": Flag(
        "lock-stall",
        "A matching lock is deleted; no lock gives -2, another token's lock -6; token \"0\" "
        "skips the check and leaves any lock. The lock is checked and deleted before the "
        "active check.",
    ),
    "missing-job": Flag("precondition", "A job without a hash gives -1 before anything else."),
    "stalled-set": Flag(
        "lock-stall",
        "Releasing the lock also takes the id out of the `stalled` SET (the stall checker's "
        "list of suspects); a move that does not release a lock leaves the set alone.",
        ("https://github.com/taskforcesh/bullmq/releases/tag/v5.5.4",),
    ),
    "event": Flag(
        "event",
        "moveToDelayed emits `delayed` with delay = the absolute F, trimmed with MAXLEN ~ "
        "opts.maxLenEvents (written as 10000 when absent).",
        ("https://github.com/taskforcesh/bullmq/issues/3267",),
    ),
    "wake": Flag(
        "wake-marker",
        "After the move, marker \"1\" is recomputed from the delayed head, even on a paused "
        "queue; marker \"0\" is not written.",
        ("https://github.com/taskforcesh/bullmq/pull/2389",),
    ),
    "priority-retry": Flag(
        "placement",
        "A retried prioritized job waits in delayed; promotion puts it back in prioritized with "
        "a fresh pc, behind jobs of its tier.",
    ),
    "promotion": Flag(
        "boundary", "A rescheduled job is promoted by a fetch at its F, not at F-1."
    ),
}

#: Fire time of the seeded cases: a move at now = T with delay 1000.
F = T + 1000


def _active(job_id: str = "1", /, **extra: dict[str, object]) -> dict[str, object]:
    """A seeded active job holding lock "tok"; `extra` adds or replaces keys."""
    given: dict[str, object] = {
        "active": wait_list(job_id),
        job_id: job_hash({"name": "a", "timestamp": str(T), "delay": "0", "priority": "0",
                          "processedOn": str(T), "ats": "1"}),
        f"{job_id}:lock": string("tok"),
    }
    given.update(extra)
    return given


def _cases() -> list[Case]:
    return [
        # --- score ---------------------------------------------------------------------------
        Case("bump-one-in-band", "A retry into a band holding one added job scores F*4096+1.",
             (add("a"), add("b", delay=1100), fetch(T), MoveToDelayed("1", T + 100, 1000)),
             ("band-bump", "score-from-now")),
        Case("bump-two-in-band", "A retry into a band holding F*4096 and F*4096+1 scores +2.",
             (MoveToDelayed("1", T, 1000),), ("band-bump",),
             given=_active(delayed=zset([("x", F * S), ("y", F * S + 1)]))),
        Case("next-band-not-bumped", "A job at (F+1)*4096 does not bump a retry to F: F*4096.",
             (MoveToDelayed("1", T, 1000),), ("band-bump",),
             given=_active(delayed=zset([("n", (F + 1) * S)]))),
        Case("saturated-band-ceiling", "A retry into a band holding its ceiling also gets it.",
             (MoveToDelayed("1", T, 1000),), ("band-bump",),
             given=_active(delayed=zset([("top", F * S + 4095)]))),
        Case("delay-0-fires-now",
             "Job.moveToDelayed(past ts) sends delay 0: F = now and a fetch at now retakes it.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 400, 0, skip_attempt=True),
              fetch(T + 400)), ("score-from-now", "hash-fields")),
        Case("two-retries-one-band",
             "Retries at (T+10, 1000) and (T+510, 500) share F = T+1010: +0, then +1.",
             (add("a"), add("b"), fetch(T), fetch(T), MoveToDelayed("1", T + 10, 1000),
              MoveToDelayed("2", T + 510, 500)), ("band-bump", "score-from-now")),
        # --- backoff and attempts ------------------------------------------------------------
        Case("fixed-backoff-twice",
             "Fixed 1000 ms backoff, fails at T+60250 and F1+300: F = now+1000 each, atm 2.",
             (add("a"), fetch(T + 60000), MoveToDelayed("1", T + 60250, 1000),
              fetch(T + 61250), MoveToDelayed("1", T + 61550, 1000)),
             ("backoff", "score-from-now", "attempts")),
        Case("exponential-backoff-3",
             "Exponential base 1000: attempts 1, 2, 3 send 2^(n-1)*1000 = 1000, 2000, 4000; atm 3.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 10, 1000),
              fetch(T + 1010), MoveToDelayed("1", T + 1020, 2000),
              fetch(T + 3020), MoveToDelayed("1", T + 3030, 4000)),
             ("backoff", "attempts", "hash-fields")),
        Case("skip-attempt",
             "Job.moveToDelayed(T+10000) at T+400: skipAttempt, delay 9600, F = T+10000, no atm.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 400, 9600, skip_attempt=True)),
             ("attempts", "score-from-now")),
        Case("skip-attempt-keeps-atm", "A skipAttempt move after a retry leaves atm at 1.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 10, 1000), fetch(T + 1010),
              MoveToDelayed("1", T + 1020, 5000, skip_attempt=True)), ("attempts",)),
        Case("event-absolute-fire-time",
             "The delayed event holds delay = absolute F; the hash delay 5000 becomes 3000.",
             (MoveToDelayed("1", T + 7000, 3000),), ("event", "hash-fields"),
             given=_active(**{"1": job_hash({"name": "a", "timestamp": str(T), "delay": "5000",
                                             "priority": "0", "ats": "1"})})),
        # --- active list and lock ------------------------------------------------------------
        Case("lrem-from-right", "With active [1, x, 1], the move removes the rightmost 1.",
             (MoveToDelayed("1", T, 1000),), ("leave-active",),
             given=_active(active=wait_list("1", "x", "1"))),
        Case("only-own-job-and-lock",
             "Retrying job 1 of active [2, 1] keeps job 2, its lock, and wait [3].",
             (add("a"), add("b"), add("c"), fetch(T), fetch(T),
              MoveToDelayed("1", T + 5, 1000)), ("leave-active", "lock")),
        Case("lock-mismatch", "Token w2 against lock w1 returns -6 and changes nothing.",
             (add("a"), fetch(T, "w1"), MoveToDelayed("1", T + 5, 1000, token="w2")), ("lock",)),
        Case("lock-missing", "A job fetched with token 0 has no lock; moving it with tok gives -2.",
             (add("a"), fetch(T, "0"), MoveToDelayed("1", T + 5, 1000)), ("lock",)),
        Case("token-0-skips-check", "Token 0 moves a job that holds no lock.",
             (add("a"), fetch(T, "0"), MoveToDelayed("1", T + 5, 1000, token="0")), ("lock",)),
        Case("token-0-keeps-lock", "Token 0 moves the job but leaves the worker's lock in place.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 5, 1000, token="0")), ("lock",)),
        Case("releases-stalled-member",
             "Releasing the lock removes the job from stalled; other members stay.",
             (MoveToDelayed("1", T + 5, 1000),), ("stalled-set", "lock"),
             given=_active(stalled=stalled("1", "2"))),
        Case("stalled-key-deleted-when-empty",
             "Removing the last stalled member deletes the stalled key.",
             (MoveToDelayed("1", T + 5, 1000),), ("stalled-set",),
             given=_active(stalled=stalled("1"))),
        Case("token-0-keeps-stalled",
             "Token 0 releases no lock, so the job stays in stalled.",
             (MoveToDelayed("1", T + 5, 1000, token="0"),), ("stalled-set", "lock"),
             given=_active(stalled=stalled("1"))),
        Case("mismatch-keeps-stalled",
             "A foreign lock stops the move before stalled is touched.",
             (MoveToDelayed("1", T + 5, 1000, token="w2"),), ("stalled-set", "lock"),
             given=_active(stalled=stalled("1"))),
        Case("not-active-lock-deleted",
             "A waiting job with lock tok returns -3, but its lock is already deleted.",
             (MoveToDelayed("1", T, 1000),), ("leave-active", "lock"),
             given={"wait": wait_list("1"), "1": job_hash({"name": "a", "priority": "0"}),
                    "1:lock": string("tok")}),
        Case("lock-checked-before-state", "A delayed job without a lock returns -2, not -3.",
             (MoveToDelayed("1", T, 1000),), ("lock", "leave-active"),
             given={"delayed": zset([("1", (T + 5000) * S)]),
                    "1": job_hash({"name": "a", "delay": "5000", "priority": "0"})}),
        Case("missing-job", "An active id with a lock but no hash returns -1 and changes nothing.",
             (MoveToDelayed("404", T, 1000),), ("missing-job",),
             given={"active": wait_list("404"), "404:lock": string("tok")}),
        # --- markers -------------------------------------------------------------------------
        Case("paused-still-wakes", "On a paused queue the move still writes marker 1 (alone).",
             (add("a"), fetch(T), Pause(), MoveToDelayed("1", T + 10, 1000)), ("wake",)),
        Case("no-base-marker",
             "The move writes only marker 1, never marker 0, with wait non-empty.",
             (MoveToDelayed("1", T, 1000),), ("wake",),
             given=_active(wait=wait_list("2"),
                           **{"2": job_hash({"name": "b", "priority": "0"})})),
        # --- after the move ------------------------------------------------------------------
        Case("promote-retry-early", "promote(id) of a retried job LPUSHes it, delay 0, atm kept 1.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 10, 1000), Promote("1")),
             ("attempts", "hash-fields")),
        Case("prioritized-retry",
             "A retried priority-3 job returns with fresh pc 3 and runs after its tier peer.",
             (add("a", priority=3), add("b", priority=3), fetch(T),
              MoveToDelayed("1", T + 10, 1000), fetch(T + 1010)),
             ("priority-retry", "promotion")),
        Case("promoted-at-fire-time",
             "A retry due at F is promoted and fetched at F: ats 2, delay 0.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 10, 1000), fetch(T + 1010)),
             ("promotion",)),
        Case("not-promoted-before-fire-time",
             "At F-1 the retry stays delayed; the fetch returns F.",
             (add("a"), fetch(T), MoveToDelayed("1", T + 10, 1000), fetch(T + 1009)),
             ("promotion",)),
    ]


AREA = Area(
    "reschedule",
    "moveToDelayed: an active job goes back to delayed at F = now + delay with the band bump; "
    "lock and active checks, atm, the delay field, the delayed event and marker \"1\".",
    NOTES,
    tuple(_cases()),
    example="bump-one-in-band",
    rule=(
        "moveToDelayed(id, token, now, delay) moves an active job to delayed at `F = now + "
        "delay` (only delay > 0 shifts) with the band bump. It checks the job (-1) and the "
        'lock (-2, -6; token "0" skips it), does `LREM active -1` (-3), `HINCRBY atm 1` '
        "unless skipAttempt, sets `delay`, emits `delayed` with the absolute F and "
        'recomputes marker "1".'
    ),
)
