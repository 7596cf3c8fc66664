"""The bundled vectors pass against our reference Lua and against the official BullMQ scripts.

The official run is the proof that the model (which generated the vectors) agrees with the
real protocol.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.core.pins import PINNED_PROTOCOL
from conformance.core.resources import lua_dir
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector
from reference_impl import versions
from tests.verdict_helpers import run_all

LUA_DIR = lua_dir()


def _run_all(vectors: list[Vector], directory: Path, server: ServerInfo,
             profile: str) -> dict[str, list[str]]:
    return run_all(vectors, ScriptsCandidate(directory), server, profile)


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_reference_lua_passes_every_vector(all_vectors: list[Vector], redis_server: ServerInfo,
                                           profile: str,
                                           profile_skips: Callable[[str], set[str]],
                                           client_side_ids: set[str]) -> None:
    outcomes = _run_all(all_vectors, LUA_DIR, redis_server, profile)
    assert outcomes["failed"] == [] and outcomes["errored"] == []
    assert len(outcomes["passed"]) >= 140
    # Only the other profile's key-naming vectors, cluster vectors when untagged, and the
    # client's own computations and plain reads (cron parity, a job and its logs by id).
    ran = {v.id for v in all_vectors}
    assert {s.split(":")[0] for s in outcomes["skipped"]} == (profile_skips(profile)
                                                              | client_side_ids) & ran


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_official_scripts_pass_every_vector(every_vector: list[Vector], redis_server: ServerInfo,
                                            official_scripts: Path, profile: str,
                                            client_side_ids: set[str]) -> None:
    """The pinned PyPI release's scripts, at the protocol of the npm release they ship (their
    flow inserts predate 6.5.1's deferred release)."""
    protocol = versions.parse(PINNED_PROTOCOL)
    held = [v for v in every_vector if v.span.holds(protocol)]
    outcomes = run_all(held, ScriptsCandidate(official_scripts), redis_server, profile,
                       protocol)
    assert outcomes["failed"] == [] and outcomes["errored"] == []
    assert len(outcomes["passed"]) >= 140
    # Only the other profile's key-naming vectors, cluster vectors when untagged, and the
    # client's own computations.
    other = {v.id for v in held if v.profile not in (None, profile)
             or ("hash-tag" in v.needs and profile == "bullmq") or v.id in client_side_ids}
    assert {s.split(":")[0] for s in outcomes["skipped"]} == other


def test_runs_leave_no_keys_behind(all_vectors: list[Vector], redis_server: ServerInfo) -> None:
    client = client_for(redis_server)
    before = set(client.scan_iter(match="bmqc-*", count=1000)) | set(
        client.scan_iter(match="*bmqc-*", count=1000))
    _run_all(all_vectors[:20], LUA_DIR, redis_server, "bullmq")
    after = set(client.scan_iter(match="*bmqc-*", count=1000))
    assert after <= before


def test_source_tree_move_to_delayed_12_is_found_and_named(
        tmp_path: Path, all_vectors: list[Vector], redis_server: ServerInfo,
        official_scripts: Path) -> None:
    """The v6.2.0 source tree ships moveToDelayed-12 (paused as KEYS[11], pc as KEYS[12])."""
    scripts = tmp_path / "commands"
    shutil.copytree(official_scripts, scripts)
    eleven = scripts / "moveToDelayed-11.lua"
    text = eleven.read_text()
    assert text.count("KEYS[11]") >= 1
    (scripts / "moveToDelayed-12.lua").write_text(text.replace("KEYS[11]", "KEYS[12]"))
    eleven.unlink()
    candidate = ScriptsCandidate(scripts)
    assert "using moveToDelayed-12.lua" in candidate.version
    reschedule = [v for v in all_vectors if v.area == "reschedule"]
    outcomes = _run_all(reschedule, scripts, redis_server, "bullmq")
    assert outcomes["failed"] == [] and outcomes["errored"] == []
    assert len(outcomes["passed"]) == len(reschedule)
