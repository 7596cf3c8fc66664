"""The @include resolver: once per file at first use, depth-first; errors are clear."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.candidates.scripts.args import ARGV
from conformance.candidates.scripts.includes import resolve
from conformance.checks.mutants import script_name
from conformance.core.errors import CandidateError
from conformance.core.resources import lua_dir

LUA_DIR = lua_dir()


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_includes_inline_once_depth_first(tmp_path: Path) -> None:
    write(tmp_path, "includes/a.lua", '--- @include "b"\nlocal a = 1\n')
    write(tmp_path, "includes/b.lua", "local b = 2\n")
    write(tmp_path, "includes/c.lua", "--- @include 'b.lua'\nlocal c = 3\n")
    write(tmp_path, "top-1.lua", '--- @include "includes/a"\n\n-- @include "includes/c"\nrun()\n')
    assert resolve(tmp_path / "top-1.lua") == "local b = 2\nlocal a = 1\nlocal c = 3\nrun()\n"


def test_inlined_scripts_pass_through(tmp_path: Path) -> None:
    write(tmp_path, "plain-1.lua", "local x = 1\n\nreturn x\n")
    assert resolve(tmp_path / "plain-1.lua") == "local x = 1\nreturn x\n"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"top-1.lua": '--- @include "includes/nope"\n'}, "cannot read"),
        ({"top-1.lua": '--- @include "includes/a"\n', "includes/a.lua": '--- @include "b"\n',
          "includes/b.lua": '--- @include "a"\n'}, "circular @include"),
        ({"top-1.lua": '--- @include "includes/a"\n--- @include "includes/a.lua"\n',
          "includes/a.lua": "x()\n"}, "includes a.lua twice"),
    ],
    ids=["missing", "cycle", "twice-in-one-file"],
)
def test_include_errors(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        write(tmp_path, name, text)
    with pytest.raises(CandidateError, match=message):
        resolve(tmp_path / "top-1.lua")


def test_every_reference_script_resolves_without_directives() -> None:
    scripts = sorted(LUA_DIR.glob("*-*.lua"))
    assert len(scripts) == 53
    for script in scripts:
        text = resolve(script)
        assert "@include" not in text
        assert text.lstrip().startswith("--[["), f"{script.name} lacks its header"
        # Every script takes KEYS; isMaxed is the one without ARGV.
        assert "KEYS[1]" in text and ("ARGV[1]" in text or ARGV[script_name(script.name)] == ())
