"""cluster: under a hash-tagged profile, every key a queue and its jobs use is in one hash slot.

Redis Cluster runs a script only when all the keys it touches live in one slot, and it hashes
only the first non-empty `{...}` of a key. A profile that tags the queue (`emq:{q}:x`) or the
prefix (`{bull}:q:x`) keeps each key family below in the slot of BASE; an untagged profile does
not, so these vectors need `hash-tag` and are skipped under it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_impl.cases import Area, Case, Flag, T, add, fetch, job_hash, wait_list
from reference_impl.ops import MoveToDelayed, Op, Resume

NOTES = {
    "one-slot": Flag(
        "key-layout",
        "Every key left after the ops, stray ones included, hashes to the slot of BASE; "
        "otherwise Redis Cluster rejects the script with CROSSSLOT.",
    ),
    "first-tag": Flag(
        "key-layout",
        "Redis hashes only the first {...} of a key, so braces inside a custom job id do not "
        "move the job hash out of the queue's slot.",
    ),
}

_NEEDS = ("hash-tag",)


def _case(name: str, description: str, when: tuple[Op, ...],
          flags: tuple[str, ...] = ("one-slot",), given: Mapping[str, Any] | None = None) -> Case:
    return Case(name, description, when, flags, given=dict(given or {}), needs=_NEEDS,
                one_slot=True)


def _cases() -> list[Case]:
    return [
        _case("standard-add", "A standard add's id, meta, events, wait, marker and job hash "
              "share BASE's slot.", (add("a"),)),
        _case("delayed-add", "A delayed add's delayed zset and marker share BASE's slot.",
              (add("a", delay=5000),)),
        _case("prioritized-add", "A prioritized add's prioritized zset and pc counter share "
              "BASE's slot.", (add("a", priority=3),)),
        _case("braced-job-id", "A custom id with braces, {other}-7, keeps its job hash in "
              "BASE's slot.", (add("a", job_id="{other}-7"),), ("one-slot", "first-tag")),
        _case("lock-and-retry", "A fetch's active list and <id>:lock, then a retry's delayed "
              "entry, share BASE's slot.", (add("a"), fetch(T), MoveToDelayed("1", T, 1000))),
        _case("legacy-paused-resume", "Resume migrating a legacy paused list touches only keys "
              "in BASE's slot.", (Resume(),),
              given={"meta": job_hash({"paused": "1"}), "paused": wait_list("2", "1")}),
    ]


AREA = Area(
    "cluster",
    "Redis Cluster: under a hash-tagged profile every key of a queue and its jobs hashes to "
    "one slot (vectors need hash-tag).",
    NOTES,
    tuple(_cases()),
    rule=(
        "Under a hash-tagged key profile (echomq: `emq:{<queue>}:`) every key a queue and "
        "its jobs use hashes to the Redis Cluster slot of BASE. Redis hashes only the first "
        "`{...}` of a key, so braces inside a custom job id do not move its keys."
    ),
)
