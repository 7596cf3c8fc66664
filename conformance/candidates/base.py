"""The candidate boundary: one small protocol that every implementation under test satisfies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import redis

from conformance.core.queues import QueueRef
from reference_impl.keys import KeyProfile
from reference_impl.ops import Op, Result
from reference_impl.versions import Version


@dataclass(frozen=True)
class Capabilities:
    """What a candidate declares about itself, so the run can plan around it.

    `cluster`: every command goes through the client the suite hands to `apply`, so the
    candidate runs on Redis Cluster (an adapter or a client library is handed one node's URL
    instead). `ops`: the op names it can apply (`reference_impl.ops.OP_NAMES`), or None when
    it tells per op (an adapter answers `skipped`); a vector with another op is skipped.
    `conventions`: see below.
    """

    cluster: bool = False
    ops: frozenset[str] | None = None
    #: Versions at which the candidate's own calling convention changes: `identify` judges a
    #: vector once on each side of them (a scripts directory: how ARGV is laid out).
    conventions: tuple[Version, ...] = ()


@runtime_checkable
class Candidate(Protocol):
    """An implementation under test.

    `apply` performs one op against Redis and returns the op's normalized result (see
    `reference_impl.ops`). It raises `CandidateError` when the candidate itself breaks
    (missing script, Lua error, crash) and `CandidateSkipped` for an op it does not support;
    Redis connection errors propagate unchanged.
    """

    @property
    def name(self) -> str:
        """A short label for reports, e.g. `reference` or `scripts:/path`."""
        ...

    @property
    def version(self) -> str:
        """What the candidate says about its own version, for the run header."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What it can do: Redis Cluster, which ops."""
        ...

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        """Called once before the first op, with the server every op must use."""
        ...

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        """Apply `op` to `queue` and return its normalized result.

        A reply of another shape than the op's result (a script that returns nothing, say) is
        returned as it came, for the runner to compare with the vector's return.
        """
        ...

    def close(self) -> None:
        """Called once at the end of the run."""
        ...
