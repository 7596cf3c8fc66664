"""The differential state machine: conforming scripts pass, a broken copy is caught and shrunk
to a short vector that loads, validates and reproduces the failure; a broken copy of the official
scripts' flows is caught too."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from conformance import cli
from conformance.candidates import from_spec
from conformance.candidates.scripts.candidate import ScriptsCandidate
from conformance.checks.mutant_catalog import CATALOG
from conformance.checks.mutants import write_mutant
from conformance.core.pins import PINNED_PROTOCOL
from conformance.core.queues import QueueNames
from conformance.core.resources import lua_dir
from conformance.properties.check import PropertyResult, check_candidate
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.servers import ServerInfo, client_for
from conformance.vectors import Vector, load_file
from reference_impl import versions
from reference_impl.generate import PROTOCOL, RULES_VERSION, SCHEMA_VERSION
from tests.scripts_helpers import BAND_BUMP, replace_once

LUA_DIR = lua_dir()

#: A seed under which the broken copy is found and shrunk quickly (any seed finds it).
BROKEN_SEED = 6
PASTE_MARKER = "vector file (area `properties`):\n\n"
#: The official scripts ship the npm release of this protocol (their flow inserts predate the
#: deferred parent release of 6.5.1): they are judged there.
OFFICIAL_AT = versions.parse(PINNED_PROTOCOL)
#: A seed whose examples reach a missed iteration early (any seed does, given enough).
SCHEDULER_SEED = 5
#: moveParentToWait's push of a released parent onto the tail of wait (next to be taken), as
#: the official moveToFinished-14.lua inlines it.
PARENT_RELEASE = 'addJobInTargetList(parentWaitKey, parentMarkerKey, "RPUSH",'
#: A seed under which the official scripts' released parent pushed to the head is found quickly.
FLOW_SEED = 7
#: A seed under which the planted band bump, with sequences of at most PLANTED_STEPS ops, is found
#: quickly (502 examples) and shrinks to the three flows the README shows (under others the
#: shrinker leaves an add with changeDelays, or six adds).
PLANTED_SEED = 13
PLANTED_STEPS = 10


@pytest.fixture(scope="module")
def no_band_bump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of lua/ whose delayed score never bumps within a band."""
    target = tmp_path_factory.mktemp("no-band-bump") / "lua"
    shutil.copytree(LUA_DIR, target)
    replace_once(target / "includes" / "getDelayedScore.lua", BAND_BUMP,
                 "return bandFloor, fireAt")
    return target


@pytest.fixture(scope="module")
def broken_result(no_band_bump: Path, redis_server: ServerInfo) -> PropertyResult:
    """The property check of the broken copy, run once for the tests that inspect it."""
    return check_candidate(ScriptsCandidate(no_band_bump), redis_server.url, examples=100,
                           seed=BROKEN_SEED, protocol=versions.CURRENT)


def _loaded(vector_yaml: str | None, tmp_path: Path) -> Vector:
    """The pasted vector of a failure, in a vector file of its own, loaded (which checks it
    against the schema and for consistency)."""
    tests = yaml.safe_load(vector_yaml or "")
    document = {"schema_version": SCHEMA_VERSION, "protocol": PROTOCOL, "area": "properties",
                "description": "Found by the property check.",
                "generator": {"source": "conformance/properties/check.py", "version": "0.1.0"},
                "rules_version": RULES_VERSION, "notes": {}, "number_of_tests": len(tests),
                "tests": tests}
    path = tmp_path / "properties.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    (vector,) = load_file(path).vectors
    return vector


def _queue_keys(redis_server: ServerInfo) -> set[str]:
    return set(client_for(redis_server).scan_iter(match="*bmqc-*", count=1000))


def test_reference_passes_with_a_fixed_seed(redis_server: ServerInfo) -> None:
    before = _queue_keys(redis_server)
    result = check_candidate(from_spec("reference"), redis_server.url, examples=50, seed=1234,
                             protocol=versions.CURRENT)
    assert result.passed, result.failure
    assert (result.seed, result.failure, result.vector_yaml) == (1234, None, None)
    assert result.examples >= 50
    assert result.examples_per_second > 0
    assert _queue_keys(redis_server) == before, "every example must delete its queue"


def test_official_scripts_pass(official_scripts: Path, redis_server: ServerInfo) -> None:
    result = check_candidate(ScriptsCandidate(official_scripts), f"url:{redis_server.url}",
                             examples=30, seed=5, protocol=OFFICIAL_AT)
    assert result.passed, result.failure
    assert result.flow_ops_applied > 0, "the flow rules never ran"
    assert result.second_queue_ops_applied > 0, "no op reached a flow's second queue"
    assert result.scheduler_ops_applied > 0, "the job scheduler rules never ran"


def _pasted_fails_there_only(result: PropertyResult, broken: Path, official: Path,
                             server: ServerInfo, tmp_path: Path) -> None:
    """The vector a failure printed fails the `broken` scripts again and passes `official`."""
    vector = _loaded(result.vector_yaml, tmp_path)
    client, profile, names = client_for(server), profile_for("bullmq"), QueueNames()
    assert run_vector(vector, ScriptsCandidate(broken), client, profile, names,
                      protocol=OFFICIAL_AT).outcome == "failed"
    assert run_vector(vector, ScriptsCandidate(official), client, profile, names,
                      protocol=OFFICIAL_AT).outcome == "passed"


@pytest.mark.slow
def test_a_released_parent_at_the_wrong_end_of_wait_is_caught(
        official_scripts: Path, redis_server: ServerInfo, tmp_path: Path) -> None:
    """The official scripts, but a parent whose last child completes goes to the head of wait
    (LPUSH: taken last) instead of the tail: the flow rules find it and shrink it to a flow, a
    job in wait, the child's fetch and its completion. The pasted vector (its values name the
    queue `<q>`) fails the broken copy again and passes the official scripts."""
    target = tmp_path / "commands"
    shutil.copytree(official_scripts, target)
    replace_once(target / "moveToFinished-14.lua", PARENT_RELEASE,
                 PARENT_RELEASE.replace("RPUSH", "LPUSH"))
    result = check_candidate(ScriptsCandidate(target), redis_server.url, examples=300,
                             seed=FLOW_SEED, protocol=OFFICIAL_AT)
    assert not result.passed and result.errored is None, result.failure
    assert "wait: list differs" in (result.failure or ""), result.failure
    when = yaml.safe_load(result.vector_yaml or "")[0]["when"]
    assert when[0]["op"] == "addFlow" and len(when) <= 6, when
    last = when[-1]
    assert (last["op"], last["target"]) == ("moveToFinished", "completed"), last
    assert last["jobId"] == when[0]["flow"]["children"][0]["jobId"]
    _pasted_fails_there_only(result, target, official_scripts, redis_server, tmp_path)


def test_a_seed_is_drawn_and_reported(redis_server: ServerInfo) -> None:
    result = check_candidate(from_spec("reference"), redis_server.url, examples=3,
                             protocol=versions.CURRENT)
    assert result.passed
    assert isinstance(result.seed, int)


@pytest.mark.slow
def test_broken_band_bump_fails_with_a_short_vector(broken_result: PropertyResult) -> None:
    assert not broken_result.passed
    text = broken_result.failure
    assert text is not None and "delayed: zset differs" in text
    assert PASTE_MARKER in text
    pasted = yaml.safe_load(text.split(PASTE_MARKER, 1)[1])
    assert pasted == yaml.safe_load(broken_result.vector_yaml or "")
    (vector,) = pasted
    assert vector["id"].startswith("properties/")
    assert (vector["flags"], vector["given"]) == ([], {})
    assert 2 <= len(vector["when"]) <= 6, vector["when"]
    assert len(vector["expect"]["returns"]) == len(vector["when"])
    # Clocks are explicit (never wall time). Not every op has one, and the shrunk sequence of
    # this seed once began with such an op in a loaded full run (not alone), so any op may come
    # first.
    stamps = [op["timestamp"] for op in vector["when"] if "timestamp" in op]
    assert stamps and min(stamps) >= 1_700_000_000_000


@pytest.mark.slow
def test_the_shrunk_vector_is_a_valid_vector_that_reproduces(
        broken_result: PropertyResult, no_band_bump: Path, redis_server: ServerInfo,
        tmp_path: Path) -> None:
    vector = _loaded(broken_result.vector_yaml, tmp_path)
    client, profile, names = client_for(redis_server), profile_for("bullmq"), QueueNames()
    broken = run_vector(vector, ScriptsCandidate(no_band_bump), client, profile, names,
                        protocol=versions.CURRENT)
    assert broken.outcome == "failed", broken
    assert run_vector(vector, from_spec("reference"), client, profile, names,
                      protocol=versions.CURRENT).outcome == "passed"


def test_cli_passes_for_the_reference(redis_server: ServerInfo,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["properties", "--examples", "5", "--seed", "7",
                     "--redis", f"url:{redis_server.url}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "seed 7" in out and "examples/s" in out and "passed" in out


@pytest.mark.slow
def test_cli_fails_with_the_vector(no_band_bump: Path, redis_server: ServerInfo,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["properties", "--candidate", f"scripts:{no_band_bump}", "--examples", "100",
                     "--seed", str(BROKEN_SEED), "--redis", f"url:{redis_server.url}"])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAILED" in out and f"seed {BROKEN_SEED}" in out
    assert len(yaml.safe_load(out.split(PASTE_MARKER, 1)[1])[0]["when"]) <= 6


@pytest.mark.slow
def test_planted_bug_outside_the_catalog_shrinks_to_three_delayed_children(
        tmp_path: Path, redis_server: ServerInfo) -> None:
    """A band bump that only works for the first two jobs of a millisecond (no mutant in the
    catalog does this) is found and shrunk to the README's three flows, each with one child
    delayed to the same fire time: the third child, the third job of that millisecond, is
    bumped like the second."""
    target = tmp_path / "lua"
    shutil.copytree(LUA_DIR, target)
    replace_once(target / "includes" / "getDelayedScore.lua", f"  {BAND_BUMP}\n",
                 "  if topScore > bandFloor then\n    return topScore, fireAt\n  end\n"
                 f"  {BAND_BUMP}\n")
    result = check_candidate(ScriptsCandidate(target), redis_server.url, examples=300,
                             seed=PLANTED_SEED, max_steps=PLANTED_STEPS,
                             protocol=versions.CURRENT)
    assert not result.passed and result.errored is None
    assert result.vector_yaml is not None
    (vector,) = yaml.safe_load(result.vector_yaml)
    when = vector["when"]
    assert [step["op"] for step in when] == ["addFlow"] * 3
    children = [child for step in when for child in step["flow"]["children"]]
    assert len(children) == 3
    assert len({child["opts"]["delay"] for child in children}) == 1  # one fire time
    delayed = vector["expect"]["keys"]["delayed"]["zset"]
    assert sorted(delayed) == sorted(child["jobId"] for child in children)
    # the third job of a millisecond bumped to +1, like the second, instead of +2
    assert re.search(r"expected score \d+ \(F=(\d+) \+2\), actual \d+ \(F=\1 \+1\)",
                     result.failure or ""), result.failure


@pytest.mark.slow
def test_missed_scheduler_iterations_not_skipped_are_caught(
        official_scripts: Path, redis_server: ServerInfo, tmp_path: Path) -> None:
    """The official scripts, but a worker's next iteration of an every scheduler fires at the
    previous fire time + every even when that is past (mutant missed-iterations-not-skipped):
    the job scheduler rules find it, and the pasted vector ends with the updateJobScheduler
    that differs; it fails the broken copy again and passes the official scripts."""
    (planted,) = [m for m in CATALOG if m.name == "missed-iterations-not-skipped"]
    target = tmp_path / "commands"
    # The official scripts inline the catch-up in the upsert and in the next iteration.
    assert write_mutant(official_scripts, target, planted) == {"addJobScheduler-11.lua",
                                                               "updateJobScheduler-12.lua"}
    result = check_candidate(ScriptsCandidate(target), redis_server.url, examples=300,
                             seed=SCHEDULER_SEED, protocol=OFFICIAL_AT)
    assert not result.passed and result.errored is None, result.failure
    when = yaml.safe_load(result.vector_yaml or "")[0]["when"]
    assert when[0]["op"] == "addJobScheduler" and when[-1]["op"] == "updateJobScheduler", when
    assert len(when) <= 5, when
    _pasted_fails_there_only(result, target, official_scripts, redis_server, tmp_path)
