"""Differential mode: same ops on two candidates, the first state difference."""

from __future__ import annotations

import shutil
from pathlib import Path

from conformance.core.resources import lua_dir
from tests.cli_helpers import cli

LUA_DIR = lua_dir()


def test_reference_and_official_scripts_agree(redis_url: str, official_scripts: Path) -> None:
    proc = cli("diff", "--candidate", "reference", "--candidate", f"scripts:{official_scripts}",
               "--redis", redis_url, "-k", "band-bump/*")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no difference in 20 vectors" in proc.stdout


def test_first_difference_is_printed(tmp_path: Path, redis_url: str) -> None:
    lua = tmp_path / "lua"
    shutil.copytree(LUA_DIR, lua)
    include = lua / "includes" / "getPriorityScore.lua"
    text = include.read_text()
    assert text.count("0x100000000") >= 2
    include.write_text(text.replace("% 0x100000000", "% 0x10000"))
    proc = cli("diff", "--candidate", "reference", "--candidate", f"scripts:{lua}",
               "--redis", redis_url, "-k", "priority-order/*")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "first difference:"
    assert lines[2].startswith("priority-order/priority-limit-max-counter (")
    assert "after op 1" in lines[2]
    assert "prioritized: zset differs" in proc.stdout


def test_diff_needs_two_candidates() -> None:
    proc = cli("diff", "--candidate", "reference")
    assert proc.returncode == 2
    assert "exactly two --candidate" in proc.stderr
