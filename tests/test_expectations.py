"""Expectations files: strict expected failures, skips, and writing one from a report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conformance.core.errors import UsageError
from conformance.core.resources import lua_dir
from conformance.vectors.expectations import from_report, load
from tests.cli_helpers import cli
from tests.scripts_helpers import BAND_BUMP, replace_once

LUA_DIR = lua_dir()


def test_globs_match_in_file_order(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("expectations:\n"
                    "  band-bump/4097-*: {outcome: skip, reason: capped}\n"
                    "  band-bump/*: {outcome: fail, reason: no bump, link: 'https://x/1'}\n")
    loaded = load(path)
    assert loaded.match("band-bump/4097-saturates").outcome == "skip"  # type: ignore[union-attr]
    hit = loaded.match("band-bump/2-same-ms")
    assert hit is not None and hit.describe() == "no bump (https://x/1)"
    assert loaded.match("next-wake/fetch-empty-queue") is None


@pytest.mark.parametrize("text", ["expectations:\n  a/*: {outcome: maybe, reason: x}\n",
                                  "expectations:\n  a/*: {outcome: fail}\n",
                                  "nope: {}\n", "expectations: [\n"])
def test_bad_files_are_usage_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "e.yaml"
    path.write_text(text)
    with pytest.raises(UsageError, match=str(path)):
        load(path)


def test_written_file_lists_failures_and_loads(tmp_path: Path) -> None:
    report = {"candidate": "scripts:x", "results": [
        {"id": "band-bump/2-same-ms", "outcome": "failed",
         "message": "1 difference(s) in Redis state\ndelayed: zset differs"},
        {"id": "next-wake/fetch-empty-queue", "outcome": "errored", "message": "boom"},
        {"id": "band-bump/3-same-ms", "outcome": "passed", "message": ""}]}
    path = tmp_path / "e.yaml"
    path.write_text(from_report(report))
    loaded = load(path)
    assert [e.pattern for e in loaded.entries] == ["band-bump/2-same-ms",
                                                   "next-wake/fetch-empty-queue"]
    assert loaded.entries[0].reason == "failed: 1 difference(s) in Redis state"
    assert loaded.match("band-bump/3-same-ms") is None


def test_strict_expected_failures_through_the_cli(tmp_path: Path, redis_url: str) -> None:
    lua = tmp_path / "lua"
    shutil.copytree(LUA_DIR, lua)
    replace_once(lua / "includes" / "getDelayedScore.lua", BAND_BUMP, "return bandFloor, fireAt")
    common = ["run", "-q", "--redis", redis_url, "--candidate", f"scripts:{lua}",
              "-k", "band-bump"]
    report = tmp_path / "r.json"
    first = cli(*common, "--report-json", str(report))
    assert first.returncode == 1
    expect = tmp_path / "expect.yaml"
    assert cli("expectations", "write", "--from", str(report), "--out",
               str(expect)).returncode == 0
    listed = cli(*common, "--expect", str(expect), "--report-json", str(report))
    assert listed.returncode == 0, listed.stdout[-2000:]
    totals = json.loads(report.read_text())["totals"]
    assert totals["xfailed"] > 0 and totals["failed"] == totals["errored"] == 0
    expect.write_text(expect.read_text() + "  band-bump/adjacent-ms-independent:\n"
                      "    outcome: fail\n    reason: wrongly listed\n")
    stale = cli(*common, "--expect", str(expect))
    assert stale.returncode == 1
    assert "remove it from your expectations file" in stale.stdout
