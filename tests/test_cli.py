"""The command line: exit codes, one-line errors, reports, and the plugin through pytest."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli import build_parser
from conformance.core.pins import PINNED_VERSION
from conformance.core.resources import lua_dir, vectors_dir
from conformance.servers import ServerInfo
from conformance.vectors import load_file
from reference_impl import versions
from tests.cli_helpers import cli
from tests.scripts_helpers import BAND_BUMP, replace_once

LUA_DIR = lua_dir()
VECTORS_DIR = vectors_dir()

SMALL = "next-wake.yaml"


def one_vector_dir(tmp_path: Path, name: str = SMALL) -> Path:
    directory = tmp_path / "vectors"
    directory.mkdir()
    shutil.copy(VECTORS_DIR / name, directory / name)
    return directory


def test_full_run_passes_with_reports(tmp_path: Path, redis_url: str,
                                      redis_server: ServerInfo) -> None:
    report, junit = tmp_path / "report.json", tmp_path / "junit.xml"
    proc = cli("run", "--redis", redis_url, "--report-json", str(report),
               "--junit-xml", str(junit))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    assert "bullmq-conformance 0.1.0: candidate reference [" in proc.stdout
    # The session's server: Redis, or the embedded Valkey on a machine with only Python.
    assert f"], protocol 6.7.0, profile bullmq, redis url {redis_server.engine} " in proc.stdout
    doc = json.loads(report.read_text())
    assert set(doc) >= {"suite_version", "candidate", "profile", "redis", "totals", "results"}
    assert doc["candidate"] == "reference" and doc["profile"] == "bullmq"
    assert doc["redis"]["kind"] == "url" and doc["redis"]["version"]
    assert doc["totals"]["failed"] == doc["totals"]["errored"] == 0
    assert doc["totals"]["passed"] >= 140
    assert doc["totals"]["skipped"] == sum(1 for r in doc["results"] if r["outcome"] == "skipped")
    outcomes = {r["id"]: r["outcome"] for r in doc["results"]}
    assert outcomes["band-bump/4097-saturates"] == "passed"
    # Older ranges of a fact are in the run, skipped: they do not hold at 6.7.0.
    assert outcomes["band-bump/4097-saturates.until-5.8.6"] == "skipped"
    assert all(outcome == "skipped" for vid, outcome in outcomes.items() if ".until-" in vid)
    assert {r["area"] for r in doc["results"]} == {
        "band-bump", "change-delay", "change-priority", "cluster", "cron-parity", "deduplication",
        "delayed-score", "finish", "finish-fetch", "finish-metrics", "finish-retention",
        "flow-add", "flow-child-end", "flow-cross-queue", "flow-insert", "flow-job",
        "flow-remove", "getters", "job-schedulers",
        "job-updates", "key-naming", "locks", "maintenance", "next-wake", "pause", "priority-order",
        "promote-job", "promote-range", "properties", "rate-limit", "repeatable-jobs",
        "reschedule", "retry", "stalled"}
    cases = ET.parse(junit).getroot().iter("testcase")
    assert sum(1 for _ in cases) == len(doc["results"])


def test_keyword_selects_vectors(tmp_path: Path, redis_url: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "-k", "4097", "--report-json", str(report))
    assert proc.returncode == 0, proc.stdout[-2000:]
    results = {r["id"]: r for r in json.loads(report.read_text())["results"]}
    # The keyword matches the fact's id, so every protocol range of it: the current one runs.
    assert set(results) == {"band-bump/4097-saturates", "band-bump/4097-saturates.until-5.8.6",
                            "band-bump/4097-saturates.until-5.1.10"}
    assert results["band-bump/4097-saturates"]["outcome"] == "passed"
    assert results["band-bump/4097-saturates.until-5.8.6"]["message"] == (
        "holds for bullmq 5.1.10 up to 5.8.6, not the protocol judged (6.7.0)")
    assert results["band-bump/4097-saturates.until-5.1.10"]["message"] == (
        "holds for bullmq 5.0.0 up to 5.1.10, not the protocol judged (6.7.0)")
    proc = cli("run", "--redis", redis_url, "-k", "4097 and not until", "--report-json",
               str(report))
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert [r["id"] for r in json.loads(report.read_text())["results"]] == [
        "band-bump/4097-saturates"]


def test_protocol_judges_the_range_that_holds_it(tmp_path: Path, redis_url: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "--protocol", "5.8.5", "-k", "4097", "--examples",
               "0", "--report-json", str(report))
    assert "], protocol 5.8.5, profile bullmq, " in proc.stdout
    doc = json.loads(report.read_text())
    assert doc["protocol"] == "5.8.5"
    results = {r["id"]: r for r in doc["results"]}
    assert results["band-bump/4097-saturates"]["message"] == (
        "holds for bullmq 5.8.6 on, not the protocol judged (5.8.5)")
    assert results["band-bump/4097-saturates.until-5.1.10"]["outcome"] == "skipped"
    # Before 5.8.6 the low 12 bits of the score came from the job id (4097 & 0xfff = 1); our
    # 6.x scripts saturate the band instead, so they fail that range's fact.
    judged = results["band-bump/4097-saturates.until-5.8.6"]
    assert judged["outcome"] == "failed" and judged["protocol"] == "5.8.5"
    assert "expected score 6963200020480001 (F=1700000005000 +1)" in judged["message"]
    assert proc.returncode == 1
    for bad in ("4.9.9", "7.0.0", "5.8"):
        proc = cli("run", "--redis", redis_url, "--protocol", bad, "-k", "4097")
        assert proc.returncode == 2, (bad, proc.stdout[-2000:])
        assert proc.stderr.count("\n") == 1 and "--protocol" in proc.stderr, proc.stderr
        assert "5.0.0 up to 5.1.1" in proc.stderr and "6.5.1 up to 7.0.0" in proc.stderr


def test_no_vector_selected_is_a_usage_error(redis_url: str) -> None:
    proc = cli("run", "--redis", redis_url, "-k", "no-such-vector-anywhere")
    assert proc.returncode == 2
    assert "no vectors selected" in proc.stderr


def test_echomq_profile_runs_its_key_naming_vectors(tmp_path: Path, redis_url: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "--profile", "echomq", "-k", "key-naming",
               "--report-json", str(report))
    assert proc.returncode == 0, proc.stdout[-2000:]
    results = json.loads(report.read_text())["results"]
    passed = {r["id"] for r in results if r["outcome"] == "passed"}
    skipped = {r["id"]: r["message"] for r in results if r["outcome"] == "skipped"}
    assert passed and all(i.startswith("key-naming/echomq-") and ".until-" not in i
                          for i in passed)
    assert any(i.startswith("key-naming/bullmq-") for i in skipped)
    assert any(i.startswith("key-naming/echomq-") for i in skipped)
    for vid, message in skipped.items():
        # An older range is skipped for its range first, whatever its profile.
        if ".until-" in vid:
            assert message.startswith("holds for bullmq 5."), (vid, message)
        else:
            assert vid.startswith("key-naming/bullmq-"), vid
            assert message == "vector is for profile bullmq", (vid, message)


@pytest.mark.slow
def test_broken_candidate_fails_with_diff(tmp_path: Path, redis_url: str) -> None:
    lua = tmp_path / "lua"
    shutil.copytree(LUA_DIR, lua)
    replace_once(lua / "includes" / "getDelayedScore.lua", BAND_BUMP,
                 "return topScore + 2, fireAt")
    junit = tmp_path / "junit.xml"
    # --examples 0: the vector's diff is the point; the properties item would fail and shrink
    # the same defect for a minute more.
    proc = cli("run", "--redis", redis_url, "--candidate", f"scripts:{lua}", "--vectors",
               str(one_vector_dir(tmp_path)), "--junit-xml", str(junit), "--examples", "0")
    assert proc.returncode == 1
    assert "next-wake/fractional-after-head-moves (" in proc.stdout
    assert "fact: With the head at F*4096+1, marker 1 is F + 1/4096." in proc.stdout
    assert "expected score 6963200020480001 (F=1700000005000 +1)" in proc.stdout
    # The JUnit file carries the same diff in the vector's <failure>.
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    failure = cases["next-wake/fractional-after-head-moves"].find("failure")
    assert failure is not None
    assert "expected score 6963200020480001 (F=1700000005000 +1)" in (failure.text or "")


def test_missing_script_is_errored_not_failed(tmp_path: Path, redis_url: str) -> None:
    lua = tmp_path / "lua"
    shutil.copytree(LUA_DIR, lua)
    (lua / "changeDelay-4.lua").unlink()
    report = tmp_path / "r.json"
    proc = cli("run", "--redis", redis_url, "--candidate", f"scripts:{lua}", "--vectors",
               str(one_vector_dir(tmp_path)), "--report-json", str(report))
    assert proc.returncode == 1
    results = json.loads(report.read_text())["results"]
    errored = [r for r in results if r["outcome"] == "errored"]
    assert errored and all("missing script changeDelay-4.lua" in r["message"] for r in errored)
    # Only the older protocol ranges are skipped; the missing script skips nothing.
    current = [r for r in results if ".until-" not in r["id"]]
    assert all(r["outcome"] in ("passed", "errored") for r in current)
    assert all(r["outcome"] == "skipped" and "not the protocol judged" in r["message"]
               for r in results if ".until-" in r["id"])


def test_unreachable_redis_is_infrastructure(tmp_path: Path) -> None:
    proc = cli("run", "--redis", "url:redis://127.0.0.1:1/0", "--vectors",
               str(one_vector_dir(tmp_path)))
    assert proc.returncode == 3
    assert "redis://127.0.0.1:1/0" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda t: t.replace("tests:\n", "tests: [\n", 1), "invalid YAML"),
        (lambda t: t.replace("op: moveToActive", "op: moveToSomewhere", 1),
         "schema violation at tests/"),
        (lambda t: t.replace("protocol: bullmq\n", "protocol: bullmq-6\n", 1),
         "schema violation at protocol"),
        (lambda t: t.replace("id: next-wake/later-job-keeps-wake",
                             "id: next-wake/earlier-job-lowers-wake", 1), "duplicate id"),
    ],
    ids=["yaml-syntax", "unknown-op", "wrong-protocol", "duplicate-id"],
)
def test_bad_vector_file_exits_2_with_one_line(tmp_path: Path, redis_url: str, mutate: object,
                                              expected: str) -> None:
    directory = one_vector_dir(tmp_path)
    path = directory / SMALL
    path.write_text(mutate(path.read_text()))  # type: ignore[operator]
    for args in (("run", "--redis", redis_url, "--vectors", str(directory)),
                 ("vectors", "check", "--vectors", str(directory))):
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stdout[-2000:], proc.stderr)
        assert expected in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr + proc.stdout
        assert str(path) in proc.stderr


def test_unknown_candidate_and_profile_are_usage_errors() -> None:
    proc = cli("run", "--candidate", "nonsense")
    assert proc.returncode == 2 and "unknown candidate 'nonsense'" in proc.stderr
    proc = cli("run", "--profile", "sidekiq")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = cli("run", "--redis", "carrier-pigeon")
    assert proc.returncode == 2 and "carrier-pigeon" in proc.stderr


@pytest.mark.parametrize(("args", "line"), [
    (("run", "--examples", "-1"), "argument --examples: must be at least 0, got -1"),
    (("properties", "--examples", "0"), "argument --examples: must be at least 1, got 0"),
    (("properties", "--steps", "0"), "argument --steps: must be at least 1, got 0"),
    (("properties", "--steps", "x"), "argument --steps: invalid integer value: 'x'"),
])
def test_counts_below_their_floor_are_one_line_usage_errors(args: tuple[str, ...],
                                                             line: str) -> None:
    # Before: `properties --examples -3` ended in Hypothesis's InvalidArgument traceback.
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"bullmq-conformance {args[0]}: error: {line} (see --help)"


def test_vectors_check_and_regenerate(tmp_path: Path) -> None:
    assert cli("vectors", "check").returncode == 0
    out = tmp_path / "fresh"
    proc = cli("vectors", "regenerate", "--out", str(out))
    assert proc.returncode == 0
    for path in VECTORS_DIR.glob("*.yaml"):
        assert (out / path.name).read_bytes() == path.read_bytes()
    shutil.copy(VECTORS_DIR / "schema.json", out / "schema.json")
    edited = out / SMALL
    edited.write_text(edited.read_text().replace("'1700000005000'", "'1700000005001'", 1))
    proc = cli("vectors", "check", "--vectors", str(out))
    assert proc.returncode == 2 and "differs from a fresh regeneration" in proc.stderr


def test_help_and_version() -> None:
    for args in (("--help",), ("run", "--help"), ("vectors", "check", "--help"),
                 ("bench", "--help")):
        proc = cli(*args)
        assert proc.returncode == 0 and "usage:" in proc.stdout
    assert "(default: auto)" in cli("run", "--help").stdout
    proc = cli("--version")
    assert proc.returncode == 0 and "protocols of npm bullmq 5.0.0 up to 7.0.0" in proc.stdout


Command = tuple[tuple[str, ...], argparse.ArgumentParser]


def _subparsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[Command]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _subparsers(sub, (*path, name))
    return found


def test_every_option_of_every_subcommand_states_its_default() -> None:
    commands = _subparsers(build_parser())
    assert len(commands) >= 14  # run, diff, report, bench, the vectors and adapter actions...
    undocumented = [
        (" ".join(path), action.option_strings)
        for path, parser in commands for action in parser._actions
        if action.option_strings and not action.required
        and not isinstance(action, argparse._HelpAction | argparse._VersionAction)
        and "(default" not in (action.help or "")
    ]
    assert undocumented == []
    for path, _ in commands:
        proc = cli(*path, "--help")
        assert proc.returncode == 0 and "usage: bullmq-conformance" in proc.stdout, path


def test_version_names_the_suite_and_the_protocol_versions() -> None:
    proc = cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == (
        "bullmq-conformance 0.1.0 (protocols of npm bullmq 5.0.0 up to 7.0.0, judged against "
        f"6.7.0 by default; PyPI bullmq 2.0.0 to {PINNED_VERSION} checked)")


def test_plain_pytest_with_plugin_options(tmp_path: Path, redis_url: str) -> None:
    directory = one_vector_dir(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "pytest", str(directory), "--bmq-candidate",
                           "reference", "--bmq-redis", redis_url, "-q", "-p",
                           "no:cacheprovider"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    vectors = load_file(directory / SMALL).vectors
    current = sum(1 for v in vectors if v.span.holds(versions.parse("6.7.0")))
    # The default protocol is 6.7.0: the older ranges are skipped; + the properties area.
    assert 0 < current < len(vectors)
    assert f"{current + 1} passed, {len(vectors) - current} skipped" in proc.stdout
