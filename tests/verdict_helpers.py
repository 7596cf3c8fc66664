"""Vectors run in this process on a candidate (no CLI, no pytest plugin), their verdicts tallied
by outcome: shared by the tests that every bundled vector passes against a candidate."""

from __future__ import annotations

from conformance.candidates.base import Candidate
from conformance.core.queues import QueueNames
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions


def run_all(vectors: list[Vector], candidate: Candidate, server: ServerInfo,
            profile: str, protocol: versions.Version = versions.CURRENT
            ) -> dict[str, list[str]]:
    """Each of `vectors` on `candidate` (started, when it needs a start), judged at `protocol`
    (the current one by default): by outcome, the ids that passed, and `id: message [first
    lines of the diff]` of the others."""
    client = client_for(server)
    names = QueueNames()
    outcomes: dict[str, list[str]] = {"passed": [], "failed": [], "errored": [], "skipped": []}
    for vector in vectors:
        # An op the candidate cannot express is a `skipped` verdict, its reason in the
        # message: run_vector raises only for Redis outages.
        verdict = run_vector(vector, candidate, client, profile_for(profile), names,
                             protocol=protocol)
        detail = vector.id if verdict.outcome == "passed" else \
            f"{vector.id}: {verdict.message} {list(verdict.diff)[:8]}"
        outcomes[verdict.outcome].append(detail)
    return outcomes
