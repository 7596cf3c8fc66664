"""The `properties` check under faults that are not the candidate's: a lost connection, a
disagreement that does not come back when replayed, an example slower than the shortest expiry
its ops set, and writes outside the run's queues on a server the suite started."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from conformance.candidates.base import Capabilities
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.errors import InfrastructureError
from conformance.core.queues import QueueNames, QueueRef
from conformance.core.resources import lua_dir
from conformance.properties import check
from conformance.properties.check import _reported, check_candidate
from conformance.properties.machine import DEFAULT_STEPS, Context
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo
from reference_impl import versions
from reference_impl.keys import KeyProfile
from reference_impl.ops import Add, Op
from tests.fault_helpers import ServerProcess


@dataclass
class Misbehaving:
    """The reference scripts, but the apply calls numbered in `lose` raise a lost connection,
    and from call `lie_from` on, `lies` adds return a wrong job id (without touching Redis)."""

    lose: set[int] = field(default_factory=set)
    lie_from: int | None = None
    lies: int = 1_000_000
    calls: int = 0
    inner: ScriptsCandidate = field(default_factory=lambda: ScriptsCandidate(lua_dir()))

    @property
    def name(self) -> str:
        return "misbehaving"

    @property
    def version(self) -> str:
        return "test"

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def start(self, redis_url: str, profile: KeyProfile) -> None:
        self.inner.start(redis_url, profile)

    def close(self) -> None:
        self.inner.close()

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Any:
        self.calls += 1
        if self.calls in self.lose:
            raise redis.ConnectionError("Connection reset by peer")
        if (self.lie_from is not None and self.calls >= self.lie_from and self.lies > 0
                and isinstance(op, Add)):
            self.lies -= 1
            return "not-the-id"
        return self.inner.apply(client, queue, op)


def test_one_lost_connection_runs_the_check_again(redis_server: ServerInfo) -> None:
    candidate = Misbehaving(lose={40})
    result = check_candidate(candidate, redis_server.url, examples=10, seed=5,
                             protocol=versions.CURRENT)
    assert result.passed, result.failure
    # The second pass ran every example again: more calls than the one that was cut short.
    assert candidate.calls > 80


def test_a_connection_lost_in_both_passes_is_the_servers(redis_server: ServerInfo) -> None:
    candidate = Misbehaving(lose=set(range(30, 100_000, 200)))
    with pytest.raises(InfrastructureError, match=r"Connection reset by peer.*twice"):
        check_candidate(candidate, redis_server.url, examples=10, seed=5, protocol=versions.CURRENT)


def test_a_disagreement_that_does_not_come_back_is_no_verdict(redis_server: ServerInfo
                                                              ) -> None:
    # One wrong answer, never repeated: Hypothesis cannot replay it, neither can we; the
    # second pass agrees throughout, so the candidate passes.
    candidate = Misbehaving(lie_from=25, lies=1)
    result = check_candidate(candidate, redis_server.url, examples=10, seed=5,
                             protocol=versions.CURRENT)
    assert result.passed, result.failure
    # Without the second pass it would have been an unsure attempt, never a failure.
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    ctx = Context(Misbehaving(lie_from=25, lies=1), client,
                              QueueNames(), profile_for("bullmq"), 5,
                              protocol=versions.CURRENT)
    ctx.candidate.start(redis_server.url, ctx.profile)
    try:
        attempt = check._attempt(ctx, check.settings(
            max_examples=10, stateful_step_count=DEFAULT_STEPS, deadline=None,
            database=None))
    finally:
        ctx.candidate.close()
        ctx.client.close()
    assert attempt.failure is None
    assert attempt.unsure is not None and "did not come back when replayed" in attempt.unsure
    assert "/" not in attempt.unsure, "no file path of Hypothesis in the message"


def test_unsure_twice_is_errored_with_the_reason(redis_server: ServerInfo,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # A real disagreement, but every example "ran longer than the shortest expiry": it may be
    # Redis's clock, so it is reported as errored with that reason, not as failed.
    monkeypatch.setattr(check, "SHORTEST_EXPIRY_S", 0.0)
    candidate = Misbehaving(lie_from=1)
    result = check_candidate(candidate, redis_server.url, examples=5, seed=5,
                             protocol=versions.CURRENT)
    assert not result.passed
    assert result.errored is not None
    assert "longer than the shortest expiry" in result.errored
    assert "it happened twice, on a server that answers the probe" in result.errored


def test_a_reproduced_disagreement_still_fails(redis_server: ServerInfo) -> None:
    candidate = Misbehaving(lie_from=1)
    result = check_candidate(candidate, redis_server.url, examples=5, seed=5,
                             protocol=versions.CURRENT)
    assert not result.passed
    assert result.errored is None
    assert result.failure is not None and "not-the-id" in result.failure


def test_writes_outside_the_run_fail_on_a_server_the_suite_started(
        redis_server: ServerInfo, tmp_path: Path) -> None:
    scripts = tmp_path / "lua"
    shutil.copytree(lua_dir(), scripts)
    script = scripts / "addStandardJob-9.lua"
    script.write_text("redis.call('RPUSH', 'bull:prod:wait', 'x')\n" + script.read_text())
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        result = check_candidate(ScriptsCandidate(scripts), redis_server.url, examples=20,
                                 seed=3, private=True, protocol=versions.CURRENT)
        assert not result.passed
        assert result.failure is not None
        assert "key outside every queue of the run: bull:prod:wait" in result.failure
        assert client.exists("bull:prod:wait") == 0, "found, reported and deleted"
    finally:
        client.delete("bull:prod:wait")
        client.close()


def test_reported_leaves_out_file_paths() -> None:
    exc = ValueError("Inconsistent results from /usr/lib/python3/site-packages/hypothesis/"
                     "core.py:123 in run\nsecond line /a/b.py")
    assert _reported(exc) == "ValueError: Inconsistent results from <file> in run"


@pytest.mark.slow
def test_a_runaway_script_errors_the_check_once(tmp_path: Path) -> None:
    """A script of the candidate that never ends is killed once and errors the check with the
    reason; Hypothesis's replays do not wait out the limit again."""
    scripts = tmp_path / "lua"
    shutil.copytree(lua_dir(), scripts)
    (scripts / "promote-9.lua").write_text("while true do end\n")
    server = ServerProcess(("--busy-reply-threshold", "500")).start()
    try:
        started = time.monotonic()
        result = check_candidate(ScriptsCandidate(scripts, limit=1.0), server.url,
                                 examples=25, seed=7, protocol=versions.CURRENT)
        seconds = time.monotonic() - started
        assert not result.passed
        assert result.errored is not None
        assert "promote-9.lua still ran after" in result.errored
        assert "SCRIPT KILL" in result.errored
        assert seconds < 10, f"{seconds:.1f} s: the limit was waited out more than once"
        assert server.client().ping()
        assert list(server.client().scan_iter(match="*bmqc-*")) == []
    finally:
        server.stop()


@dataclass
class FlushingOnce(Misbehaving):
    """The reference scripts; another client flushes the database after apply call `at`."""

    at: int = 40

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Any:
        result = super().apply(client, queue, op)
        if self.calls == self.at:
            redis.Redis.from_url(self.url).flushdb()
        return result

    url: str = ""


def test_someone_elses_flush_runs_the_check_again() -> None:
    """On a server not ours the check finds keys by tracking, which hears of a flush: what the
    candidate wrote is gone, so the check runs again rather than fail."""
    server = ServerProcess().start()
    try:
        candidate = FlushingOnce(url=server.url)
        result = check_candidate(candidate, server.url, examples=10, seed=5,
                                 protocol=versions.CURRENT)
        assert result.passed, result.failure
        assert candidate.calls > 80, "the second pass ran every example again"
        # The first pass ended on the flush itself (not on a disagreement it caused).
        client = redis.Redis.from_url(server.url, decode_responses=True)
        names = QueueNames()
        tracker = check._tracker(server.url, names, client, check.health.probe_key(
            profile_for("bullmq"), names.run_id))
        assert tracker is not None
        ctx = Context(FlushingOnce(url=server.url), client, names,
                                  profile_for("bullmq"), 5, finder=tracker,
                                  protocol=versions.CURRENT)
        try:
            attempt = check._attempt(ctx, check.settings(
                max_examples=10, stateful_step_count=DEFAULT_STEPS, deadline=None,
                database=None))
        finally:
            client.close()
        assert (attempt.failure, attempt.unsure) == (None, None)
        assert ctx.infra is not None and ctx.infra.startswith("someone else flushed the server")
    finally:
        server.stop()
