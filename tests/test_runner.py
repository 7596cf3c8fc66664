"""Runner verdicts: errored for candidate breakage, skipped for another profile, and an
infrastructure error (never a failure) when Redis is gone."""

from __future__ import annotations

import pytest
import redis

from conformance.candidates.base import Capabilities
from conformance.core.errors import CandidateError, InfrastructureError
from conformance.core.queues import QueueNames, QueueRef
from conformance.run.serial import run_vector
from conformance.run.session import profile_for
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
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
                         client_for(redis_server), profile_for("bullmq"), QueueNames())
    assert verdict.outcome == "errored"
    assert verdict.message == "candidate error in add: boom: script raised"


def test_other_profile_is_skipped(all_vectors: list[Vector], redis_server: ServerInfo) -> None:
    verdict = run_vector(_vector(all_vectors, "key-naming/echomq-standard-add"), Crashing(),
                         client_for(redis_server), profile_for("bullmq"), QueueNames())
    assert (verdict.outcome, verdict.message) == ("skipped", "vector is for profile echomq")


@pytest.mark.slow
def test_redis_gone_is_infrastructure_not_failure(all_vectors: list[Vector]) -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5,
                       decode_responses=True)
    with pytest.raises(InfrastructureError, match="Redis connection lost"):
        run_vector(_vector(all_vectors, "band-bump/2-same-ms"), Crashing(), dead,
                   profile_for("bullmq"), QueueNames())


def test_queue_names_are_unique_and_not_substrings() -> None:
    names = QueueNames("abcd")
    made = [names.next() for _ in range(12)]
    assert made[0] == "bmqc-abcd-000001"
    assert all(a not in b for a in made for b in made if a != b)
