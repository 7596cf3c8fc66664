"""Every bundled vector passes against the official PyPI `bullmq` client (`--candidate bullmq-py`).

Ops the Python client cannot express (it has no `changeDelay`) are skipped, never failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from conformance import snapshot
from conformance.candidates.base import QueueRef
from conformance.candidates.bullmq_package import frozen_seconds
from conformance.candidates.bullmq_py import PythonClientCandidate
from conformance.errors import CandidateError, CandidateSkipped
from conformance.runner import QueueNames, run_vector
from conformance.servers import ServerInfo, client_for
from conformance.session import profile_for
from conformance.vectors import Vector
from reference_impl.keys import BULLMQ, ECHOMQ, KeyProfile
from reference_impl.ops import Add, ChangeDelay, MoveToActive, Promote

pytest.importorskip("bullmq", reason="the dev extra installs bullmq==3.4.4")


@pytest.fixture
def candidate() -> Iterator[PythonClientCandidate]:
    """A candidate that is closed after the test."""
    made = PythonClientCandidate()
    yield made
    made.close()


def _run_all(vectors: list[Vector], server: ServerInfo, profile: str,
             candidate: PythonClientCandidate) -> dict[str, list[str]]:
    client = client_for(server)
    names = QueueNames()
    outcomes: dict[str, list[str]] = {"passed": [], "failed": [], "errored": [], "skipped": []}
    candidate.start(server.url, profile_for(profile))
    for vector in vectors:
        try:
            verdict = run_vector(vector, candidate, client, profile_for(profile), names)
        except CandidateSkipped as exc:  # until the runner turns it into a verdict
            outcomes["skipped"].append(f"{vector.id}: {exc}")
            continue
        detail = vector.id if verdict.outcome == "passed" else \
            f"{vector.id}: {verdict.message} {list(verdict.diff)[:8]}"
        outcomes[verdict.outcome].append(detail)
    return outcomes


def _change_delay_ids(vectors: list[Vector], profile: str) -> set[str]:
    return {v.id for v in vectors if v.profile in (None, profile)
            and any(isinstance(op, ChangeDelay) for op in v.when)}


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_python_client_passes_every_vector(all_vectors: list[Vector], redis_server: ServerInfo,
                                           candidate: PythonClientCandidate, profile: str,
                                           profile_skips: Callable[[str], set[str]]) -> None:
    outcomes = _run_all(all_vectors, redis_server, profile, candidate)
    assert outcomes["failed"] == []
    assert outcomes["errored"] == []
    assert len(outcomes["passed"]) >= 120
    skipped_for_op = set()
    for line in outcomes["skipped"]:
        # Only changeDelay (no Python API), and what the profile skips anyway.
        if "changeDelay" in line:
            skipped_for_op.add(line.split(":")[0])
        else:
            assert line.split(":")[0] in profile_skips(profile), line
    assert skipped_for_op == _change_delay_ids(all_vectors, profile)


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_change_delay_runs_when_the_package_loads_it(all_vectors: list[Vector],
                                                     redis_server: ServerInfo,
                                                     candidate: PythonClientCandidate,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     profile: str) -> None:
    """Register the shipped changeDelay-4.lua the way the package registers its scripts."""
    import bullmq.redis_connection

    definitions = {**bullmq.redis_connection.SCRIPT_DEFINITIONS, "changeDelay": "changeDelay-4.lua"}
    monkeypatch.setattr(bullmq.redis_connection, "SCRIPT_DEFINITIONS", definitions)
    wanted = _change_delay_ids(all_vectors, profile)
    outcomes = _run_all([v for v in all_vectors if v.id in wanted], redis_server, profile,
                        candidate)
    assert sorted(outcomes["passed"]) == sorted(wanted), outcomes


@pytest.mark.parametrize("profile", [BULLMQ, ECHOMQ], ids=["bullmq", "echomq"])
def test_keys_follow_the_profile(redis_server: ServerInfo, candidate: PythonClientCandidate,
                                 profile: KeyProfile) -> None:
    client = client_for(redis_server)
    queue = QueueRef(profile, QueueNames().next())
    candidate.start(redis_server.url, profile)
    try:
        assert candidate.apply(client, queue, Add("a", 1700000000000, {"n": 1},
                                                  {"delay": 5000})) == "1"
        assert client.zscore(queue.key("delayed"), "1") == 1700000005000 * 4096
        assert candidate.apply(client, queue, Promote("1")) == 0
        assert candidate.apply(client, queue, Promote("1")) == -3
        assert candidate.apply(client, queue, MoveToActive(1700000000123)) == \
            {"job": "1", "ttl": 0, "next": 0}
        assert client.hget(queue.key("1"), "processedOn") == "1700000000123"
        with pytest.raises(CandidateSkipped):
            candidate.apply(client, queue, ChangeDelay("1", 1000, 1700000000000))
    finally:
        snapshot.delete_queue(client, queue)


def test_wrong_profile_is_a_candidate_error(redis_server: ServerInfo,
                                            candidate: PythonClientCandidate) -> None:
    candidate.start(redis_server.url, BULLMQ)
    queue = QueueRef(ECHOMQ, QueueNames().next())
    with pytest.raises(CandidateError, match="BASE"):
        candidate.apply(client_for(redis_server), queue, Add("a", 1700000000000))


def test_clock_is_restored_after_an_op(redis_server: ServerInfo,
                                       candidate: PythonClientCandidate) -> None:
    import time

    import bullmq.job
    import bullmq.scripts

    client = client_for(redis_server)
    queue = QueueRef(BULLMQ, QueueNames().next())
    candidate.start(redis_server.url, BULLMQ)
    try:
        candidate.apply(client, queue, MoveToActive(1700000000000))
    finally:
        snapshot.delete_queue(client, queue)
    assert bullmq.job.time is time and bullmq.scripts.time is time


@pytest.mark.parametrize("ms", [0, 1, 1700000000001, 1700000004999, 1700000000123, 2**41 - 1])
def test_frozen_seconds_round_trip(ms: int) -> None:
    assert round(frozen_seconds(ms) * 1000) == ms
