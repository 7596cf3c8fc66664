"""The example adapter (package data; `adapter example` writes it): small, self-contained, and
passing the whole suite."""

from __future__ import annotations

import ast
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.core.resources import example_adapter
from tests.cli_helpers import ROOT, cli

EXAMPLE = str(example_adapter())
ALLOWED_THIRD_PARTY = {"redis", "msgpack"}


def adapter_command(scripts: Path) -> str:
    return shlex.join([sys.executable, EXAMPLE, str(scripts)])


def test_example_is_short_and_uses_only_stdlib_redis_msgpack() -> None:
    source = Path(EXAMPLE).read_text(encoding="utf-8")
    assert len(source.splitlines()) < 100
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module, "no relative imports"
            imported.add(node.module.split(".")[0])
    assert {"redis", "msgpack"} <= imported
    assert imported - ALLOWED_THIRD_PARTY <= set(sys.stdlib_module_names), imported


@pytest.mark.parametrize("profile", ["bullmq", "echomq"])
def test_example_passes_every_vector(profile: str, official_scripts: Path, redis_url: str,
                                     tmp_path: Path,
                                     profile_skips: Callable[[str], set[str]],
                                     adapter_v1_skips: set[str]) -> None:
    report = tmp_path / "report.json"
    proc = cli("run", "-q", "--profile", profile, "--redis", redis_url,
               "--candidate", f"command:{adapter_command(official_scripts)}",
               "--report-json", str(report), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert doc["profile"] == profile
    assert doc["totals"]["failed"] == doc["totals"]["errored"] == 0, doc["totals"]
    assert doc["totals"]["passed"] >= 140
    skipped = {r["id"] for r in doc["results"] if r["outcome"] == "skipped"}
    # The example speaks adapter protocol 1: the worker half's vectors are skipped, with why.
    assert skipped == profile_skips(profile) | adapter_v1_skips
    reasons = {r["id"]: r.get("message", "") for r in doc["results"]}
    # The scheduler script calls as vectors give them are in no version; the rest in a newer one.
    assert all("adapter protocol 1" in reasons[i] or "no adapter protocol version has"
               in reasons[i] for i in adapter_v1_skips - profile_skips(profile))
    assert any("no adapter protocol version has" in reasons[i] for i in adapter_v1_skips)


def test_adapter_check_accepts_the_example(official_scripts: Path, redis_url: str) -> None:
    proc = cli("adapter", "check", adapter_command(official_scripts), "--redis", redis_url,
               cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all replies follow protocol 1" in proc.stdout


def test_script_errors_become_errored_replies(official_scripts: Path, redis_url: str,
                                              tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    shutil.copytree(official_scripts, scripts)
    (scripts / "promote-9.lua").write_text('return redis.error_reply("ERR boom")\n')
    proc = cli("adapter", "check", adapter_command(scripts), "--redis", redis_url, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # errored is a valid reply
    assert "promote(jobId=2): errored: ResponseError: boom" in proc.stdout, proc.stdout
