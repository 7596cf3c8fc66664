"""delayed-score: packing `F * 0x1000` where F = timestamp + delay only for delay > 0."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, T, add, job_hash, string, zset
from reference_impl.ops import ChangeDelay

NOTES = {
    "score-formula": Flag("score", "Delayed score must be (timestamp+delay)*0x1000."),
    "zero-delay": Flag(
        "placement", "A delay of 0 is not delayed: the fire time is the timestamp itself."
    ),
    "precision": Flag(
        "score",
        "Scores are doubles: exact while F < 2^41 ms (until 2039-09-07); above that Lua "
        "arithmetic rounds and the band bump can be lost.",
    ),
    "change-delay": Flag(
        "score", "changeDelay scores from the caller's now, not the job's timestamp.",
        ("https://github.com/taskforcesh/bullmq/pull/789",),
    ),
    "return-code": Flag("precondition", "Scripts return Node ErrorCode values (-1, -3)."),
    "job-hash": Flag("key-layout", "The job hash fields written on add."),
    "id-collision": Flag(
        "key-layout",
        "Auto ids are not checked for existence: an integer-like custom id can be overwritten "
        "by a later auto id. Node rejects such custom ids client-side; the scripts accept them.",
        ("https://github.com/taskforcesh/bullmq/issues/3489",),
    ),
    "event": Flag(
        "event", "The delayed event carries the absolute fire time F, not the delay.",
        ("https://github.com/taskforcesh/bullmq/issues/3267",),
    ),
}

EDGE = 2**41  # first fire time whose band is not exactly representable


def _cases() -> list[Case]:
    cases = [
        Case("delay-5000", "A 5000 ms delay scores (T+5000)*4096 and emits delay=T+5000.",
             (add("a", delay=5000),), ("score-formula", "event")),
        Case("delay-1ms", "A 1 ms delay lands in the band of T+1.",
             (add("a", delay=1),), ("score-formula",)),
        Case("delay-one-day", "A one-day delay scores (T+86400000)*4096.",
             (add("a", delay=86_400_000),), ("score-formula",)),
        Case("delay-one-year", "A 365-day delay scores exactly (T+31536000000)*4096.",
             (add("a", delay=31_536_000_000),), ("score-formula",)),
        Case("timestamp-zero", "Timestamp 0 with delay 1 scores exactly 4096.",
             (add("a", 0, delay=1),), ("score-formula",)),
        Case("timestamp-not-now", "The score uses the job timestamp, however old it is.",
             (add("a", T - 3_600_000, delay=10),), ("score-formula",)),
        Case("delay-0-goes-to-wait", "An add with delay 0 goes to wait, not to delayed.",
             (add("a", delay=0),), ("zero-delay",)),
        Case("delay-0-with-priority", "Delay 0 with priority 3 goes to prioritized.",
             (add("a", delay=0, priority=3),), ("zero-delay",)),
        Case("delay-and-priority", "A job with delay and priority is delayed first.",
             (add("a", delay=5000, priority=3),), ("score-formula", "job-hash")),
        Case("order-by-fire-time", "Delayed jobs sort by fire time, not insertion order.",
             (add("a", delay=5000), add("b", delay=3000)), ("score-formula",)),
        Case("later-timestamp-earlier-fire", "A later add with an earlier fire time sorts first.",
             (add("a", T, delay=2000), add("b", T + 1000, delay=500)), ("score-formula",)),
        Case("custom-id-delayed", "A custom id is the member and the hash key; id still counts.",
             (add("a", delay=5000, job_id="job-a"),), ("score-formula", "job-hash")),
        Case("data-and-opts-stored", "Data and opts are stored as JSON; delay/priority fields.",
             (add("a", delay=7, data={"user": {"id": 7, "tags": ["x", "y"]}, "ok": True}),),
             ("job-hash",)),
        Case("id-counter-continues", "Auto ids continue from the id counter.",
             (add("a", delay=5000),), ("job-hash",), given={"id": string("41")}),
        Case("change-delay-from-now", "changeDelay(3000) at now=T+500 scores (T+3500)*4096.",
             (add("a", delay=5000), ChangeDelay("1", 3000, T + 500)),
             ("change-delay", "event")),
        Case("change-delay-zero", "changeDelay(0) at now scores now*4096 (delay 0 edge).",
             (add("a", delay=5000), ChangeDelay("1", 0, T + 100)), ("change-delay", "zero-delay")),
        Case("change-delay-missing-job", "changeDelay of a missing job returns -1.",
             (ChangeDelay("nope", 1000, T),), ("return-code",)),
        Case("change-delay-not-delayed", "changeDelay of a waiting job returns -3.",
             (add("a"), ChangeDelay("1", 1000, T)), ("return-code",)),
        Case("precision-last-exact-band", "F = 2^41-1 scores 2^53-4096 exactly.",
             (add("a", EDGE - 1 - 5000, delay=5000),), ("precision",)),
        Case("precision-last-exact-ceiling", "In band 2^41-1 a bump reaches 2^53-1 exactly.",
             (add("a", EDGE - 1 - 5000, delay=5000),), ("precision",),
             given={"delayed": zset([("s", (EDGE - 1) * 4096 + 4094)]),
                    "s": job_hash({"priority": "0"})}),
        Case("precision-2pow41-floor", "F = 2^41 scores 2^53, still exact.",
             (add("a", EDGE - 5000, delay=5000),), ("precision",)),
        Case("precision-2pow41-bump-lost", "At F = 2^41 the +1 bump rounds away: both score 2^53.",
             (add("a", EDGE - 5000, delay=5000), add("b", EDGE - 5000, delay=5000)),
             ("precision",)),
        Case("duplicate-custom-id",
             "Re-adding a custom id emits duplicated and changes nothing else.",
             (add("a", delay=5000, job_id="x"), add("b", delay=100, job_id="x")), ("job-hash",)),
        Case("change-delay-sets-max-events", "changeDelay writes opts.maxLenEvents when missing.",
             (ChangeDelay("s", 2000, T),), ("change-delay",),
             given={"delayed": zset([("s", (T + 5000) * 4096)]),
                    "s": job_hash({"name": "s", "delay": "5000", "priority": "0"})}),
        Case("integer-custom-id-collides", "Auto id 2 after custom id 2 rewrites the same hash.",
             (add("a", delay=5000, job_id="2"), add("b")), ("job-hash", "id-collision")),
        Case("lifo-ignored-when-delayed", "lifo does not change where a delayed add goes.",
             (add("a", delay=5000, lifo=True),), ("score-formula",)),
    ]
    return cases


AREA = Area(
    "delayed-score",
    "Delayed-score packing: F*0x1000 with F = timestamp + delay when delay > 0, the fields and "
    "events a delayed add writes, and changeDelay scoring from now.",
    NOTES,
    tuple(_cases()),
    rule=(
        "A job added with delay > 0 goes to the delayed zset at score `F * 0x1000` (plus "
        "the band bump), with `F = timestamp + delay`; a delay of 0 is not delayed. The job "
        "hash records the delay, and the `delayed` event carries the absolute fire time F. "
        "Scores are doubles, exact while F < 2^41 ms."
    ),
)
