"""key-naming: the full key names each profile writes (`bull:<q>:x`, `emq:{<q>}:x`)."""

from __future__ import annotations

from reference_impl.cases import Area, Case, Flag, T, add, fetch
from reference_impl.ops import ChangeDelay, MoveToActive, MoveToDelayed, Pause, Promote

NOTES = {
    "key-names": Flag(
        "key-layout", "Keys are <prefix>:<queue>:<suffix>; job hashes are BASE + job id."
    ),
    "key-types": Flag(
        "key-layout",
        "wait/active are LISTs; delayed/prioritized/marker ZSETs; jobs HASHes; events a STREAM.",
        ("https://github.com/bogardt/bullmq-rs/issues/2",),
    ),
    "hash-tag": Flag(
        "key-layout", "The echomq profile wraps the queue in braces so all keys share a slot."
    ),
    "lock": Flag("lock-stall", "The lock key is BASE + id + ':lock', absent for token \"0\"."),
}


def _for(profile: str) -> list[Case]:
    flags = ("key-names", "key-types") + (("hash-tag",) if profile == "echomq" else ())
    where = {"bullmq": "bull:<queue>:", "echomq": "emq:{<queue>}:"}[profile]
    return [
        Case(f"{profile}-standard-add", f"A standard add writes id, meta, events, wait, marker and "
             f"the job under {where}.", (add("a"),), flags, profile=profile),
        Case(f"{profile}-delayed-add", f"A delayed add writes {where}delayed.",
             (add("a", delay=5000),), flags, profile=profile),
        Case(f"{profile}-prioritized-add", f"A prioritized add writes {where}prioritized and pc.",
             (add("a", priority=1),), flags, profile=profile),
        Case(f"{profile}-custom-id", f"A custom id's hash is {where}<id>.",
             (add("a", job_id="order-42"),), flags, profile=profile),
        Case(f"{profile}-non-ascii-id", f"A custom id keeps its UTF-8 bytes in {where}<id>.",
             (add("a", job_id="zürich-é"),), flags, profile=profile),
        Case(f"{profile}-fetch-lock", f"A fetch writes {where}active and {where}<id>:lock.",
             (add("a"), fetch(T)), (*flags, "lock"), profile=profile),
        Case(f"{profile}-token-0-no-lock", f"A fetch with token \"0\" writes no {where}<id>:lock.",
             (add("a"), MoveToActive(T, "0")), (*flags, "lock"), profile=profile),
        Case(f"{profile}-drained-pc", f"After draining, {where}pc is gone.",
             (add("a", priority=1), fetch(T), fetch(T)), flags, profile=profile),
        Case(f"{profile}-change-delay", f"changeDelay rewrites the job at {where}<id>.",
             (add("a", delay=5000), ChangeDelay("1", 1000, T)), flags, profile=profile),
        Case(f"{profile}-promote", f"promote moves the job to {where}wait.",
             (add("a", delay=5000), Promote("1")), flags, profile=profile),
        Case(f"{profile}-retry", f"moveToDelayed deletes {where}<id>:lock and writes "
             f"{where}delayed.", (add("a"), fetch(T), MoveToDelayed("1", T, 1000)),
             (*flags, "lock"), profile=profile),
        Case(f"{profile}-pause", f"pause writes {where}meta and deletes {where}marker.",
             (add("a"), Pause()), flags, profile=profile),
    ]


AREA = Area(
    "key-naming",
    "Full key names and key types under the bullmq and echomq profiles. Each vector runs only "
    "under the profile it names.",
    NOTES,
    tuple(_for("bullmq") + _for("echomq")),
    rule=(
        "Every key is `BASE + suffix`, with BASE `bull:<queue>:` (bullmq profile) or "
        "`emq:{<queue>}:` (echomq). A job hash is `BASE + id`, its lock `BASE + id + "
        '":lock"`. wait and active are lists; delayed, prioritized and marker are zsets; '
        "jobs are hashes; events is a stream."
    ),
)
