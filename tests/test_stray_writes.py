"""A candidate that writes outside its queue: on a server the suite started, where no one else
writes, every key outside the run's queues is the candidate's, and fails the vector that wrote
it, on the serial path and in batches alike; the key is deleted."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import redis

from conformance.candidates.base import Capabilities
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.errors import CandidateSkipped
from conformance.core.outcomes import Outcome
from conformance.core.queues import QueueNames, QueueRef
from conformance.core.resources import lua_dir
from conformance.run import batch
from conformance.run.serial import run_vector
from conformance.run.session import Run
from conformance.run.spec import RunOptions, profile_for
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions
from reference_impl.ops import Add, Op, Result
from tests.fault_helpers import ServerProcess, finish, run_in_background

OUTSIDE = "key outside every queue of the run: bull:prod:wait"


@pytest.fixture(scope="module")
def stray_scripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Our Lua, whose standard add also pushes onto another application's queue."""
    scripts = tmp_path_factory.mktemp("stray") / "lua"
    shutil.copytree(lua_dir(), scripts)
    script = scripts / "addStandardJob-9.lua"
    script.write_text("redis.call('RPUSH', 'bull:prod:wait', 'x')\n" + script.read_text())
    return scripts


def _adds_standard(vector: Vector) -> bool:
    return any(isinstance(op, Add) and not op.opts.get("delay") and not op.opts.get("priority")
               for op in vector.when)


@pytest.mark.parametrize("path", ["serial", "batched"])
def test_a_write_outside_the_queue_fails_the_vector_that_wrote_it(
        path: str, stray_scripts: Path, redis_server: ServerInfo,
        all_vectors: list[Vector]) -> None:
    assert redis_server.private
    vectors = [v for v in all_vectors if v.profile in (None, "bullmq") and not v.needs][:120]
    writers = {v.id for v in vectors if _adds_standard(v)}
    assert writers and len(writers) < len(vectors), "the selection must have both kinds"
    client = client_for(redis_server)
    candidate = ScriptsCandidate(stray_scripts)
    candidate.start(redis_server.url, profile_for("bullmq"))
    names = QueueNames()
    try:
        if path == "serial":
            verdicts = [run_vector(v, candidate, client, profile_for("bullmq"), names,
                                   redis_server, protocol=versions.CURRENT) for v in vectors]
        else:
            verdicts = batch.run_vectors(vectors, candidate, client, profile_for("bullmq"),
                                         names, redis_server, protocol=versions.CURRENT)
        flagged = {v.vector.id for v in verdicts if any(OUTSIDE in line for line in v.diff)}
        assert flagged == {v.id for v in vectors if v.id in writers and v.when}
        assert all(v.outcome is Outcome.FAILED for v in verdicts if v.vector.id in flagged)
        assert client.exists("bull:prod:wait") == 0, "the stray key is deleted"
    finally:
        candidate.close()
        client.delete("bull:prod:wait")
        client.close()


def test_the_reference_writes_nothing_outside(redis_server: ServerInfo,
                                              all_vectors: list[Vector]) -> None:
    client = client_for(redis_server)
    candidate = ScriptsCandidate(lua_dir())
    candidate.start(redis_server.url, profile_for("bullmq"))
    try:
        verdicts = batch.run_vectors(all_vectors[:60], candidate, client, profile_for("bullmq"),
                                     QueueNames(), redis_server, protocol=versions.CURRENT)
        assert not [v for v in verdicts if any("outside every queue" in d for d in v.diff)]
        assert any(v.outcome is Outcome.PASSED for v in verdicts)
    finally:
        candidate.close()
        client.close()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "two-workers"])
def test_on_a_shared_server_a_write_outside_the_run_is_warned_about(
        workers: list[str], stray_scripts: Path) -> None:
    """On a `url:` server the write may be another client's: no verdict changes, but the run
    ends with a warning naming the key (from every worker), and leaves the key alone."""
    server = ServerProcess().start()
    try:
        client = server.client()
        client.rpush("bull:prod:wait", "theirs")
        ended = finish(run_in_background("-q", "--examples", "0", "-k", "pause",
                                         "--candidate", f"scripts:{stray_scripts}",
                                         "--redis", f"url:{server.url}", *workers))
        assert ended.code == 0, ended.out[-2000:] + ended.err
        lines = ended.err.strip().splitlines()
        assert len(lines) == 1, ended.err
        assert lines[0].startswith("bullmq-conformance: warning: keys outside the run's queues "
                                   "were written on the shared server while vectors ran, by "
                                   "the candidate or by another client: bull:prod:wait (")
        assert "Traceback" not in ended.out + ended.err
        assert client.lrange("bull:prod:wait", 0, 0) == ["theirs"], "not ours to delete"
        assert client.llen("bull:prod:wait") > 1
    finally:
        server.stop()


def test_keys_the_final_sweep_must_leave_are_named(tmp_path: Path) -> None:
    """A `url:` server that turned read-only replica before the end keeps the run's keys: the
    run says so, with their prefix and how to delete them, instead of nothing."""
    server = ServerProcess().start()
    dead = ServerProcess()  # a port nothing listens on: the replica keeps its data
    client = server.client()
    try:
        run = Run(RunOptions(redis=f"url:{server.url}"))
        run.start()
        left = f"bull:{run.names.prefix}000001:wait"
        client.rpush(left, "1")  # as an interrupted vector would have left it
        client.replicaof("127.0.0.1", str(dead.port))
        run.close()
        assert client.exists(left) == 1
        (warning,) = run.warnings()
        assert warning.startswith("warning: keys of this run may be left on the server (the "
                                  "cleanup failed: the server is a read-only replica")
        assert run.names.prefix in warning and "--scan --pattern" in warning
    finally:
        client.replicaof("NO", "ONE")
        server.stop()


class _WritesThenSkips:
    """A port whose add writes a key outside its queue and then skips the vector's next op,
    as bullrs 0.0.3's adds write the set `""` before an op it lacks."""

    name = "writes-then-skips"
    version = "0"
    capabilities = Capabilities()

    def apply(self, client: redis.Redis, queue: QueueRef, op: Op) -> Result:
        client.sadd("", f"{queue.base}1")
        raise CandidateSkipped("this port has no such op")


@pytest.mark.parametrize("private", [True, False])
def test_a_skipped_vectors_stray_key_is_not_blamed_on_the_next_vector(
        private: bool, redis_server: ServerInfo, all_vectors: list[Vector]) -> None:
    server = dataclasses.replace(redis_server, owned=private)
    client = client_for(redis_server)
    vector = next(v for v in all_vectors if v.id == "band-bump/2-same-ms")
    profile = profile_for("bullmq")
    names = QueueNames()
    try:
        first = run_vector(vector, _WritesThenSkips(), client, profile, names, server,
                           protocol=versions.CURRENT)
        assert first.outcome is Outcome.SKIPPED
        # Where every key is ours, the skipped vector's stray key went with it.
        assert client.exists("") == (0 if private else 1)
        candidate = ScriptsCandidate(lua_dir())
        candidate.start(redis_server.url, profile)
        try:
            second = run_vector(vector, candidate, client, profile, names, server,
                                protocol=versions.CURRENT)
        finally:
            candidate.close()
        assert second.outcome is Outcome.PASSED or not private, second.diff
    finally:
        client.delete("")
        client.close()
