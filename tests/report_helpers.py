"""Shared by the report tests: two real CLI runs on the session Redis (the reference, and a broken
copy of our scripts with expectations), the HTML page made from their JSON reports, and the
constants and builders the tests check them with.

`runs` and `page` are fixtures: tests/conftest.py loads this module as a plugin, so every report
module gets them, and each pytest process (each xdist worker) makes them once.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.core.resources import lua_dir, schema
from tests.cli_helpers import cli
from tests.scripts_helpers import replace_once

LUA_DIR = lua_dir()

SCHEMA = schema("report")
SELECTION = "band-bump or delayed-score or key-naming or properties"
SEED, EXAMPLES = 7, 3
OUTCOMES = ("passed", "failed", "errored", "skipped", "xfailed")
# The failing candidate's expectations: one expected failure, one expected skip; their reasons
# carry the characters a page or a summary must escape.
XFAIL_ID, SKIP_ID = "band-bump/4097-saturates", "delayed-score/delay-one-year"
EXPECTATIONS = f"""expectations:
  "{XFAIL_ID}": {{outcome: fail, reason: "we cap <bands> & {{keys}}"}}
  "{SKIP_ID}": {{outcome: skip, reason: 'no "year" delays <yet>'}}
"""
CLICKED = "band-bump/2-same-ms"  # a vector the broken copy fails with a diff
HOSTILE = "<script>window.pwned = 1</script> {\"a\": 'b'} & </pre><b>not bold</b>"


def broken_lua(directory: Path) -> Path:
    """A copy of our scripts with the wrong band shift (F*0x800) and no changeDelay script."""
    lua = directory / "lua"
    shutil.copytree(LUA_DIR, lua)
    band = ("  local bandFloor = fireAt * 0x1000\n"
            "  local bandCeiling = (fireAt + 1) * 0x1000 - 1\n")
    replace_once(lua / "includes" / "getDelayedScore.lua", band, band.replace("0x1000", "0x800"))
    (lua / "changeDelay-4.lua").unlink()
    return lua


@dataclass(frozen=True)
class Runs:
    """Two real runs of the CLI on the session Redis, and what they wrote."""

    passing: subprocess.CompletedProcess[str]
    failing: subprocess.CompletedProcess[str]
    passing_json: Path
    failing_json: Path
    summary: Path
    before: str  # what the summary file held before both runs appended to it

    def documents(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text(encoding="utf-8"))
                for p in (self.passing_json, self.failing_json)]


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Runs:
    tmp = tmp_path_factory.mktemp("reports")
    lua = broken_lua(tmp)
    expect = tmp / "expect.yaml"
    expect.write_text(EXPECTATIONS, encoding="utf-8")
    summary = tmp / "summary.md"
    before = "## Earlier step\n\nits own text, no final newline"
    summary.write_text(before, encoding="utf-8")
    common = ["run", "-q", "--redis", redis_url, "-k", SELECTION, "--seed", str(SEED),
              "--examples", str(EXAMPLES), "--summary-md", str(summary)]
    passing_json, failing_json = tmp / "reference.json", tmp / "broken.json"
    passing = cli(*common, "--report-json", str(passing_json))
    failing = cli(*common, "--candidate", f"scripts:{lua}", "--expect", str(expect),
                  "--report-json", str(failing_json))
    return Runs(passing, failing, passing_json, failing_json, summary, before)


@pytest.fixture(scope="session")
def page(runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("page") / "report.html"
    proc = cli("report", "--html", str(out), str(runs.passing_json), str(runs.failing_json))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"wrote {out}: 2 report(s), ")
    return out


def report_document(results: list[dict[str, str]], candidate: str = "c") -> dict[str, Any]:
    totals = Counter(r["outcome"] for r in results)
    return {"report_version": 1, "suite_version": "0.1.0", "candidate": candidate,
            "candidate_version": "v", "profile": "bullmq", "seed": 1, "examples": 0,
            "redis": {"kind": "local", "engine": "redis", "version": "7.0.15",
                      "redis_version": "7.0.15", "cluster": False},
            "totals": {o: totals[o] for o in OUTCOMES}, "results": results}
