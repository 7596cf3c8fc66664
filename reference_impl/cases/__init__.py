"""Vector cases, one module per protocol area. Each case states the setup; the model computes
the expected outcome when the vectors are generated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl.ops import Add, MoveToActive, Op
from reference_impl.versions import Version

#: The reference creation time used throughout: 2023-11-14T22:13:20Z.
T = 1_700_000_000_000
S = 0x1000


@dataclass(frozen=True)
class Flag:
    """What a flag means: the bug type it guards and, for regressions, the upstream reference."""

    bug_type: str
    description: str
    ref: str | None = None


@dataclass(frozen=True)
class Case:
    """A vector before its expectation is computed."""

    name: str
    description: str
    when: tuple[Op, ...]
    flags: tuple[str, ...] = ()
    given: Mapping[str, Any] = field(default_factory=dict)
    profile: str | None = None
    needs: tuple[str, ...] = ()
    one_slot: bool = False
    #: The earliest protocol version the case is claimed for (None: the earliest supported).
    #: Facts checked on fewer releases start later, rather than claim what nobody ran.
    since: Version | None = None


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
