"""A conformance run's shared state: the Redis server, the candidate, and the verdicts.

Used by the pytest plugin, and usable without pytest (the bench drives it directly).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

import reference_impl
from conformance import servers
from conformance.candidate import Candidate
from conformance.candidates import from_spec
from conformance.command_candidate import DEFAULT_TIMEOUT
from conformance.errors import HarnessError, InfrastructureError, UsageError
from conformance.runner import QueueNames, Verdict, run_vector
from conformance.vectors import Vector
from reference_impl.keys import PROFILES, KeyProfile

SUITE_VERSION = reference_impl.__version__
OUTCOMES = ("passed", "failed", "errored", "skipped", "xfailed")


@dataclass(frozen=True)
class RunOptions:
    """What to run against what."""

    candidate: str = "reference"
    profile: str = "bullmq"
    redis: str = "auto"
    adapter_timeout: float = DEFAULT_TIMEOUT


def profile_for(name: str) -> KeyProfile:
    """The key profile named on the command line."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(f"unknown profile {name!r}; expected one of: "
                         f"{', '.join(PROFILES)}") from None


@dataclass
class Run:
    """A started run: call `start()`, then `run(vector)` per vector, then `close()`."""

    options: RunOptions
    candidate: Candidate = field(init=False)
    profile: KeyProfile = field(init=False)
    server: servers.ServerInfo | None = None
    client: redis.Redis | None = None
    names: QueueNames = field(default_factory=QueueNames)
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def __post_init__(self) -> None:
        self.candidate = from_spec(self.options.candidate, self.options.adapter_timeout)
        self.profile = profile_for(self.options.profile)
        servers.parse_spec(self.options.redis)

    def start(self) -> None:
        """Provision Redis. Raises InfrastructureError with a one-line cause."""
        try:
            self.server = self._stack.enter_context(servers.provision(self.options.redis))
            self.client = servers.client_for(self.server)
            self.client.ping()
            self.candidate.start(self.server.url, self.profile)
        except redis.RedisError as exc:
            self.close()
            raise InfrastructureError(f"Redis is not usable: {exc}") from None
        except BaseException:
            self.close()
            raise

    def run(self, vector: Vector) -> Verdict:
        """Run one vector (start() first)."""
        if self.client is None:
            raise InfrastructureError("Redis was not started")
        return run_vector(vector, self.candidate, self.client, self.profile, self.names)

    def close(self) -> None:
        """Stop whatever start() started."""
        with contextlib.suppress(HarnessError):
            self.candidate.close()
        if self.client is not None:
            with contextlib.suppress(redis.RedisError):
                self.client.close()
        self._stack.close()

    def header(self) -> str:
        """One line naming the suite, candidate, profile and Redis engine."""
        engine = "not started"
        if self.server is not None:
            engine = f"{self.server.kind} {self.server.engine} {self.server.version}"
            if self.server.detail:
                engine += f" ({self.server.detail})"
        return (f"bullmq-conformance {SUITE_VERSION}: candidate {self.candidate.name} "
                f"[{self.candidate.version}], "
                f"profile {self.profile.name}, redis {engine}")


def report_document(run: Run, verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """The `--report-json` document."""
    totals = dict.fromkeys(OUTCOMES, 0)
    for verdict in verdicts:
        totals[verdict["outcome"]] += 1
    server = run.server
    return {
        "suite_version": SUITE_VERSION,
        "candidate": run.candidate.name,
        "candidate_version": run.candidate.version,
        "profile": run.profile.name,
        "redis": {
            "kind": server.kind if server else None,
            "engine": server.engine if server else None,
            "version": server.version if server else None,
        },
        "totals": totals,
        "results": verdicts,
    }


def write_report(path: Path, document: dict[str, Any]) -> None:
    """Write the JSON report."""
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
