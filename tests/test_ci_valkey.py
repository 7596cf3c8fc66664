"""ci/valkey.sh takes its Debian mirror from the machine's apt sources, never a fixed host.

`--print-sources` runs only the lookup: the sources list the script would hand apt-get, from
the apt configuration directory `BMQC_APT_ETC` names (a fake one here). Nothing is installed.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout (tests run from it)
SCRIPT = ROOT / "ci" / "valkey.sh"


def print_sources(apt_etc: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), "--print-sources"], capture_output=True,
                          text=True, timeout=30, check=False,
                          env={**os.environ, "BMQC_APT_ETC": str(apt_etc)})


def test_the_mirror_comes_from_deb822_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.test/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.test/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n")
    proc = print_sources(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "deb http://mirror.test/debian bookworm main",
        "deb http://mirror.test/debian bookworm-updates main",
        "deb http://mirror.test/debian-security bookworm-security main",
        "deb http://mirror.test/debian bookworm-backports main"]


def test_the_mirror_comes_from_one_line_deb_entries(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.test/debian bookworm main\n"
        "deb-src http://src.test/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://other.test/debian/ bookworm main contrib\n")
    proc = print_sources(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [  # no security archive there: none is invented
        "deb http://other.test/debian bookworm main",
        "deb http://other.test/debian bookworm-updates main",
        "deb http://other.test/debian bookworm-backports main"]


def test_no_debian_archive_is_one_line_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "node.sources").write_text(
        "Types: deb\nURIs: https://deb.nodesource.test/node_20.x\nSuites: nodistro\n")
    for apt_etc in (tmp_path, tmp_path / "missing"):
        proc = print_sources(apt_etc)
        assert proc.returncode == 1
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ci/valkey.sh: no Debian archive"), lines
        assert str(apt_etc) in lines[0]
