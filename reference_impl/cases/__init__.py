"""Vector cases, one module per protocol area. Each case states the setup; the model computes
the expected outcome when the vectors are generated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl.ops import Add, MoveToActive, Step
from reference_impl.versions import Version

#: The reference creation time used throughout: 2023-11-14T22:13:20Z.
T = 1_700_000_000_000
S = 0x1000


#: The defect classes a flag can guard (a vector file's `bug_type`, an enum in the schema),
#: in the order the spec lists them.
BUG_TYPES: dict[str, str] = {
    "key-layout": "A key with the wrong name, Redis type or hash slot, a job hash with the wrong "
    "fields, or a write outside the queue's keys.",
    "score": "A sorted-set score computed wrong: the delayed packing F * 0x1000, the "
    "same-millisecond band, the priority counter, double precision, or the clock a time is "
    "taken from.",
    "placement": "A job put in the wrong structure or at the wrong end of a list, fetched in the "
    "wrong order, or left where it should have moved.",
    "boundary": "An inclusive or exclusive limit, a count or a range off by one or unbounded: "
    "promote bounds, trims, retention cutoffs, batch sizes.",
    "missing-write": "A write, delete or counter update the protocol makes is skipped, partial, "
    "or left stale.",
    "wake-marker": "The marker zset and the next-wake time that wake workers: missing, stale, "
    "clobbered or computed wrong.",
    "event": "An event in the events stream missing, extra, or with the wrong fields.",
    "precondition": "A check done in the wrong order or not at all, or the wrong error code "
    "returned.",
    "lock-stall": "Lock tokens, lock expiry and stalled-job recovery: a job lost, stuck in "
    "active, or processed twice.",
    "pause": "What a paused queue, or one at its concurrency, still does and no longer does.",
    "rate-limit": "The rate limiter: its counter, its window, and which jobs it counts.",
    "deduplication": "Who owns a deduplication key, for how long, and when it is released.",
    "flow": "A parent and its children: the parent record a child stores, the parent's "
    "dependencies, processed, failed and unsuccessful keys, and when the parent is released "
    "(where to, with which markers and events).",
    "older-protocol": "A fact as an older protocol range states it, or a layout older releases "
    "used.",
}


@dataclass(frozen=True)
class Flag:
    """What a flag means: the class of defect it guards (a key of `BUG_TYPES`) and links to
    the BullMQ issue, pull request or release the fact comes from."""

    bug_type: str
    description: str
    links: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.bug_type not in BUG_TYPES:
            raise ValueError(f"unknown bug_type {self.bug_type!r}; one of {sorted(BUG_TYPES)}")


@dataclass(frozen=True)
class Case:
    """A vector before its expectation is computed."""

    name: str
    description: str
    when: tuple[Step, ...]
    flags: tuple[str, ...] = ()
    given: Mapping[str, Any] = field(default_factory=dict)
    profile: str | None = None
    needs: tuple[str, ...] = ()
    one_slot: bool = False
    #: The earliest protocol version the case is claimed for (None: the earliest supported).
    #: Facts checked on fewer releases start later, rather than claim what nobody ran.
    since: Version | None = None
    #: The first protocol version the case no longer holds for: the ops it calls are gone
    #: (None: it still holds).
    until: Version | None = None


@dataclass(frozen=True)
class Area:
    """One vector file: its cases and the notes for every flag they use."""

    name: str
    description: str
    notes: Mapping[str, Flag]
    cases: tuple[Case, ...]
    #: The earliest protocol version every case of the area is claimed for, unless a case
    #: says otherwise (the worker half's areas: versions.WORKER_SINCE).
    since: Version | None = None
    #: The area's rule in plain words, with its formula: the opening of its section of the spec.
    rule: str = ""
    #: The case the spec works through as the area's example (None: the first case).
    example: str | None = None


def add(
    name: str,
    timestamp: int = T,
    *,
    delay: int | None = None,
    priority: int | None = None,
    lifo: bool | None = None,
    job_id: str | None = None,
    data: Any = None,
) -> Add:
    """An add op with only the given opts set."""
    opts: dict[str, Any] = {}
    if delay is not None:
        opts["delay"] = delay
    if priority is not None:
        opts["priority"] = priority
    if lifo is not None:
        opts["lifo"] = lifo
    return Add(name, timestamp, data if data is not None else {"n": name}, opts, job_id)


def fetch(now: int, token: str = "tok") -> MoveToActive:
    """A worker fetch at `now`."""
    return MoveToActive(now, token)


def zset(members: list[tuple[str, int]]) -> dict[str, Any]:
    """A seeded zset in vector form."""
    return {"zset": dict(members)}


def string(value: str) -> dict[str, Any]:
    """A seeded string in vector form."""
    return {"string": value}


def wait_list(*items: str) -> dict[str, Any]:
    """A seeded list in vector form (left to right)."""
    return {"list": list(items)}


def stalled(*members: str) -> dict[str, Any]:
    """The `stalled` SET (its members sorted, as vectors state sets)."""
    return {"set": sorted(members)}


def job_hash(fields: Mapping[str, str]) -> dict[str, Any]:
    """A seeded job hash in vector form."""
    return {"hash": dict(fields)}
