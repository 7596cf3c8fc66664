"""Runner verdicts: errored for candidate breakage, skipped for another profile, and an
infrastructure error (never a failure) when Redis is gone."""

from __future__ import annotations

import pytest
import redis

from conformance.candidates.base import Capabilities
from conformance.core.errors import CandidateError, InfrastructureError
from conformance.core.outcomes import Skip, SkipKind
from conformance.core.queues import QueueNames, QueueRef
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.ops import Op, Result


class Crashing:
    """A candidate whose every op breaks."""

    name = "crashing"
    version = "0"
    capabilities = Capabilities()

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        raise CandidateError("boom: script raised")


def _vector(all_vectors: list[Vector], vid: str) -> Vector:
    return next(v for v in all_vectors if v.id == vid)


def test_candidate_error_is_errored(all_vectors: list[Vector], redis_server: ServerInfo) -> None:
    verdict = run_vector(_vector(all_vectors, "band-bump/2-same-ms"), Crashing(),
                         client_for(redis_server), profile_for("bullmq"), QueueNames(),
                         protocol=versions.CURRENT)
    assert verdict.outcome == "errored"
    assert verdict.message == "candidate error in add: boom: script raised"


def test_other_profile_is_skipped(all_vectors: list[Vector], redis_server: ServerInfo) -> None:
    verdict = run_vector(_vector(all_vectors, "key-naming/echomq-standard-add"), Crashing(),
                         client_for(redis_server), profile_for("bullmq"), QueueNames(),
                         protocol=versions.CURRENT)
    assert (verdict.outcome, verdict.message) == ("skipped", "vector is for profile echomq")
    # The skip is data on the verdict: its kind, and the words the message took from it.
    assert verdict.skip == Skip(SkipKind.PROFILE, "vector is for profile echomq")


def test_an_other_range_skip_names_the_protocol_it_is_counted_under(
        every_vector: list[Vector], redis_server: ServerInfo) -> None:
    older = next(v for v in every_vector if not v.span.holds(versions.CURRENT))
    verdict = run_vector(older, Crashing(), client_for(redis_server), profile_for("bullmq"),
                         QueueNames(), protocol=versions.CURRENT)
    assert verdict.skip is not None and verdict.skip.kind is SkipKind.RANGE
    assert verdict.message == verdict.skip.reason
    assert verdict.skip.group == ("holds for another protocol range, not the protocol judged "
                                  f"({versions.text(versions.CURRENT)})")


@pytest.mark.slow
def test_redis_gone_is_infrastructure_not_failure(all_vectors: list[Vector]) -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5,
                       decode_responses=True)
    with pytest.raises(InfrastructureError, match="Redis connection lost"):
        run_vector(_vector(all_vectors, "band-bump/2-same-ms"), Crashing(), dead,
                   profile_for("bullmq"), QueueNames(), protocol=versions.CURRENT)


def test_queue_names_are_unique_and_not_substrings() -> None:
    names = QueueNames("abcd")
    made = [names.next() for _ in range(12)]
    assert made[0] == "bmqc-abcd-000001"
    assert all(a not in b for a in made for b in made if a != b)
