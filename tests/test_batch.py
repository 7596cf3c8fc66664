"""The pipelined runner (`conformance.run.batch`) gives the serial path's verdicts, word for word,
on passing and failing scripts, Lua errors included, and leaves no key behind."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.checks.mutant_catalog import CATALOG, EVERY_ENTRY_DIFFERS
from conformance.checks.mutants import batches, write_mutant
from conformance.core.errors import InfrastructureError
from conformance.core.outcomes import Outcome
from conformance.core.queues import QueueNames
from conformance.core.resources import lua_dir
from conformance.run import batch
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.run.verdict import Verdict
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions
from tests.cli_helpers import cli
from tests.fault_helpers import local_spec

PROFILE = profile_for("bullmq")
#: An expiry's remaining time in a diff is a clock reading: it differs between two serial runs.
_CLOCK = re.compile(r'(pttl"?:? |actual )[0-9]+')
Seen = tuple[str, Outcome, str, tuple[str, ...]]
#: A mutant each of the queue half, the finish script and the worker half, by name.
MUTANTS = ("no-band-bump", "sweep-rpush", *(m.name for m in CATALOG[-1:]))


@pytest.fixture
def client(redis_server: ServerInfo) -> Iterator[redis.Redis]:
    assert redis_server.owned and not redis_server.cluster
    with client_for(redis_server) as connection:
        yield connection


def _verdicts(vectors: list[Vector], candidate: ScriptsCandidate, client: redis.Redis,
              server: ServerInfo, pipelined: bool) -> list[Seen]:
    names = QueueNames()
    if pipelined:
        found = batch.run_vectors(vectors, candidate, client, PROFILE, names, server,
                                  protocol=versions.CURRENT)
    else:
        found = [run_vector(v, candidate, client, PROFILE, names, server,
                            protocol=versions.CURRENT) for v in vectors]
    assert not list(client.scan_iter(match=f"*bmqc-{names.run_id}-*")), "keys left behind"
    return [(v.vector.id, v.outcome, v.message, tuple(_CLOCK.sub(r"\1<ms>", line)
                                                      for line in v.diff)) for v in found]


def _same(vectors: list[Vector], directory: Path, client: redis.Redis,
          server: ServerInfo) -> list[Seen]:
    candidate = ScriptsCandidate(directory)
    serial = _verdicts(vectors, candidate, client, server, pipelined=False)
    assert _verdicts(vectors, candidate, client, server, pipelined=True) == serial
    return serial


def test_reference_verdicts_match(every_vector: list[Vector], client: redis.Redis,
                                  redis_server: ServerInfo) -> None:
    verdicts = _same(every_vector, lua_dir(), client, redis_server)
    assert {outcome for _, outcome, *_ in verdicts} == {Outcome.PASSED, Outcome.SKIPPED}


def test_official_verdicts_match(every_vector: list[Vector], official_scripts: Path,
                                 client: redis.Redis, redis_server: ServerInfo) -> None:
    _same(every_vector, official_scripts, client, redis_server)


@pytest.mark.parametrize("name", [*MUTANTS, EVERY_ENTRY_DIFFERS.name])
def test_mutant_verdicts_match(name: str, every_vector: list[Vector], client: redis.Redis,
                               redis_server: ServerInfo, tmp_path: Path) -> None:
    mutant = next(m for m in [*CATALOG, EVERY_ENTRY_DIFFERS] if m.name == name)
    write_mutant(lua_dir(), tmp_path / "mutant", mutant)
    verdicts = _same(every_vector, tmp_path / "mutant", client, redis_server)
    assert any(outcome.failing for _, outcome, *_ in verdicts)


def _broken(tmp_path: Path, script: str) -> Path:
    """lua/ with `script` raising a Lua error on every call."""
    target = tmp_path / "broken"
    shutil.copytree(lua_dir(), target)
    path = target / script
    path.write_text('error("deliberately broken")\n' + path.read_text(encoding="utf-8"),
                    encoding="utf-8")
    return target


def test_lua_errors_are_attributed_as_serially(every_vector: list[Vector], client: redis.Redis,
                                               redis_server: ServerInfo,
                                               tmp_path: Path) -> None:
    verdicts = _same(every_vector, _broken(tmp_path, "promote-9.lua"), client, redis_server)
    errored = [message for _, outcome, message, _ in verdicts if outcome is Outcome.ERRORED]
    assert errored and all(m.startswith("candidate error in promote: promote-9.lua raised: ")
                           for m in errored)


def test_missing_script_is_attributed_as_serially(every_vector: list[Vector],
                                                  client: redis.Redis, redis_server: ServerInfo,
                                                  tmp_path: Path) -> None:
    directory = _broken(tmp_path, "promote-9.lua")
    (directory / "changeDelay-4.lua").unlink()
    verdicts = _same(every_vector, directory, client, redis_server)
    assert any("missing script changeDelay-4.lua" in message for _, _, message, _ in verdicts)


def test_a_vector_with_an_op_error_runs_again_serially(
        every_vector: list[Vector], client: redis.Redis, redis_server: ServerInfo,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the pipeline the ops after a failing op still run; the serial path never sends them.
    So such a vector is run again serially, and only its serial verdict counts."""
    later = [v for v in every_vector if v.span.until is None
             and any(type(op).__name__ == "Promote" for op in v.when[:-1])]
    assert later, "no vector with ops after a promote"
    again: list[str] = []

    def serial(vector: Vector, *args: Any, **kwargs: Any) -> Verdict:
        again.append(vector.id)
        return run_vector(vector, *args, **kwargs)

    monkeypatch.setattr(batch, "run_vector", serial)
    candidate = ScriptsCandidate(_broken(tmp_path, "promote-9.lua"))
    names = QueueNames()
    found = batch.run_vectors(later, candidate, client, PROFILE, names, redis_server,
                              protocol=versions.CURRENT)
    assert again == [v.id for v in later]
    assert all(v.outcome is Outcome.ERRORED and v.message.startswith("candidate error in "
                                                                     "promote: ") for v in found)
    assert not list(client.scan_iter(match=f"*bmqc-{names.run_id}-*"))


def test_an_interrupt_cleans_up_the_batch(every_vector: list[Vector], client: redis.Redis,
                                          redis_server: ServerInfo,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(pipe: redis.client.Pipeline, pattern: str, run_prefix: str) -> None:
        pipe.execute()  # the seeds and ops land; the interrupt comes before the read
        raise KeyboardInterrupt

    monkeypatch.setattr(batch.snapshot, "read_matching", interrupted)
    names = QueueNames()
    with pytest.raises(KeyboardInterrupt):
        batch.run_vectors(every_vector, ScriptsCandidate(lua_dir()), client, PROFILE, names,
                          redis_server, protocol=versions.CURRENT)
    assert not list(client.scan_iter(match=f"*bmqc-{names.run_id}-*"))


def test_a_lost_connection_is_an_infrastructure_error(every_vector: list[Vector],
                                                      client: redis.Redis,
                                                      redis_server: ServerInfo,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def lost(*args: Any) -> None:
        raise redis.ConnectionError("gone")

    monkeypatch.setattr(batch.snapshot, "decode_read_all", lost)
    with pytest.raises(InfrastructureError, match="Redis connection lost: gone"):
        batch.run_vectors(every_vector, ScriptsCandidate(lua_dir()), client, PROFILE,
                          QueueNames(), redis_server, protocol=versions.CURRENT)


def test_serial_switch_and_where_batches_run(redis_server: ServerInfo,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    candidate = ScriptsCandidate(lua_dir())
    assert batch.pipelined(candidate, redis_server)
    assert not batch.pipelined(candidate, None)
    shared = ServerInfo("url", "redis", "7", redis_server.url, False, "")
    assert not batch.pipelined(candidate, shared)
    monkeypatch.setenv(batch.SERIAL_ENV, "1")
    assert not batch.pipelined(candidate, redis_server)


def test_mutant_batches_grow() -> None:
    sizes = [len(b) for b in batches(list(range(100)), limit=16)]  # type: ignore[arg-type]
    assert sizes == [1, 2, 4, 8, 16, 16, 16, 16, 16, 5]


def _cli_run(tmp_path: Path, label: str, serial: bool, *args: str) -> tuple[dict[str, Any], str]:
    report = tmp_path / f"{label}-{'serial' if serial else 'batched'}.json"
    env = {k: v for k, v in os.environ.items() if k != batch.SERIAL_ENV}
    if serial:
        env[batch.SERIAL_ENV] = "1"
    proc = cli("run", "--redis", local_spec(), "--examples", "0", "--seed", "1", "--report-json",
               str(report), *args, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    shown = "\n".join(_CLOCK.sub(r"\1<ms>", line) for line in proc.stdout.splitlines()
                      if not re.search(r" in [0-9.]+ s$", line))
    found = json.loads(report.read_text(encoding="utf-8"))
    for result in found["results"]:
        result["message"] = _CLOCK.sub(r"\1<ms>", result["message"])
    return found, shown


@pytest.mark.parametrize("scripts", ["reference", "mutant", "broken"])
def test_run_reports_match(scripts: str, tmp_path: Path) -> None:
    """`bullmq-conformance run` on a server it started: the same report and terminal output
    with and without BULLMQ_CONFORMANCE_SERIAL, on a passing, a failing and an erroring
    candidate, and with -x and -k."""
    if scripts == "mutant":
        write_mutant(lua_dir(), tmp_path / "mutant", EVERY_ENTRY_DIFFERS)
        spec = f"scripts:{tmp_path / 'mutant'}"
    else:
        broken = _broken(tmp_path, "promote-9.lua") if scripts == "broken" else None
        spec = f"scripts:{broken}" if broken else "reference"
    variants = [(), ("-x",), ("-k", "promote or delay")] if scripts != "reference" else [()]
    for extra in variants:
        serial = _cli_run(tmp_path, scripts, True, "--candidate", spec, *extra)
        assert _cli_run(tmp_path, scripts, False, "--candidate", spec, *extra) == serial
        failing = any(r["outcome"] in ("failed", "errored") for r in serial[0]["results"])
        assert failing == (scripts != "reference")


def test_a_batch_sent_is_run_by_redis_while_we_wait_elsewhere(
        every_vector: list[Vector], client: redis.Redis, redis_server: ServerInfo) -> None:
    names = QueueNames()
    runs = batch.Batches(ScriptsCandidate(lua_dir()), client, PROFILE, names, redis_server, None)
    try:
        ticket = runs.submit(every_vector[:48], versions.CURRENT)
        assert ticket.flight is not None  # sent, not read
        # Redis runs it before a command sent later on another connection: the keys are
        # already read and deleted when that command runs.
        deadline = 200
        while list(client.scan_iter(match=f"*bmqc-{names.run_id}-*")) and deadline:
            deadline -= 1
        assert deadline, "the batch never ran"
        verdicts = runs.verdicts(ticket)
    finally:
        runs.close()
    assert [v.vector.id for v in verdicts] == [v.id for v in every_vector[:48]]
    assert all(v.outcome in (Outcome.PASSED, Outcome.SKIPPED) for v in verdicts)


def test_closing_with_a_batch_in_flight_cuts_it_and_leaves_no_key(
        every_vector: list[Vector], client: redis.Redis, redis_server: ServerInfo) -> None:
    names = QueueNames()
    runs = batch.Batches(ScriptsCandidate(lua_dir()), client, PROFILE, names, redis_server, None)
    ticket = runs.submit(every_vector[:48], versions.CURRENT)
    runs.close()
    assert ticket.flight is None
    assert not list(client.scan_iter(match=f"*bmqc-{names.run_id}-*"))
    assert client.ping()  # no reply of the cut batch is left on a pooled connection
    assert client.set(f"bmqc-{names.run_id}-check", "1") and client.delete(
        f"bmqc-{names.run_id}-check") == 1


def test_replies_read_later_come_as_redis_sent_them(client: redis.Redis) -> None:
    key = f"bmqc-inflight-{os.getpid()}"
    pipe = client.pipeline(transaction=False)
    pipe.set(key, "v")
    pipe.incr(key)  # an error reply: not an integer
    pipe.get(key)
    pipe.execute_command("GET", key, **{batch.NEVER_DECODE: True})
    try:
        flight = batch._InFlight.send(client, pipe)
        replies = flight.receive()
    finally:
        client.delete(key)
    # no reply callback (SET would give True), errors in place, NEVER_DECODE honoured
    assert replies[0] == "OK" and isinstance(replies[1], redis.ResponseError)
    assert replies[2:] == ["v", b"v"]
