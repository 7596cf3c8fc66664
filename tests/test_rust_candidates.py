"""`bullmq-rust` and `port:NAME` (`conformance.candidates.clients.rust`): built once into the
cache with cargo, then started from there; a missing cargo, a failed build or the cache turned
off is one line with its exit code, never a verdict. A stand-in `cargo` on PATH plays the
toolchain here; the real builds run in CI (`ci/rust-adapters.sh`, `ci/installed.sh`,
`ci/releases.sh`)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from conformance.candidates.clients import rust
from conformance.candidates.spec import CandidateSpec
from conformance.core import resources
from conformance.core.errors import CandidateUnusable, UsageError
from tests.cli_helpers import cli

_ADAPTER = rust.RustAdapter("port:demo", "rust-ports/demo", "demo-adapter", "demo 1.0.0")


def _crate(tmp_path: Path) -> Path:
    source = tmp_path / "crate"
    (source / "src").mkdir(parents=True)
    (source / "Cargo.toml").write_text('[package]\nname = "demo"\n')
    (source / "Cargo.lock").write_text("version = 4\n")
    (source / "src" / "main.rs").write_text("fn main() {}\n")
    return source


def _cargo(tmp_path: Path, script: str) -> Path:
    """A `cargo` on PATH that runs `script` (sh), logging each call to `calls`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    cargo = bin_dir / "cargo"
    cargo.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\n{script}\n')
    cargo.chmod(cargo.stat().st_mode | stat.S_IXUSR)
    return bin_dir


@pytest.fixture
def crate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    source = _crate(tmp_path)
    shared = tmp_path / "rust-adapter"
    (shared / "src").mkdir(parents=True)
    (shared / "Cargo.toml").write_text('[package]\nname = "clock"\n')
    (shared / "src" / "lib.rs").write_text("pub fn pinned() {}\n")
    monkeypatch.setattr(rust, "rust_crate_source",
                        lambda folder, *files: shared if folder == "rust-adapter" else source)
    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path / "cache"))
    return source


# What the stand-in cargo builds: the program, where `--target-dir` says.
_BUILDS = ('target=$(echo "$@" | sed "s/.*--target-dir //")\n'
           'echo "   Compiling demo v1.0.0"\n'
           'mkdir -p "$target/release" && printf "#!/bin/sh\\n" > "$target/release/demo-adapter"')


def test_the_first_use_builds_once_and_later_uses_start_the_built_program(
        crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", f"{_cargo(tmp_path, _BUILDS)}{os.pathsep}{os.environ['PATH']}")
    program = rust.built_adapter(_ADAPTER)
    assert program.is_file() and program.name == "demo-adapter"
    assert program.is_relative_to(tmp_path / "cache")
    err = capsys.readouterr().err
    assert "building the port:demo adapter (demo 1.0.0) once" in err
    assert "  Compiling demo v1.0.0" in err  # cargo's progress, passed on
    call = (tmp_path / "calls").read_text()
    assert "build --release --locked" in call and str(crate / "Cargo.toml") in call
    assert rust.built_adapter(_ADAPTER) == program
    assert (tmp_path / "calls").read_text() == call  # no second cargo call
    # Other sources (an upgrade of the suite) build into a folder of their own: another pin,
    # or another version of the clock crate every adapter builds from by path.
    (crate / "Cargo.lock").write_text("version = 4\n# another pin\n")
    repinned = rust.built_adapter(_ADAPTER)
    assert repinned.parent.parent != program.parent.parent
    (tmp_path / "rust-adapter" / "src" / "lib.rs").write_text("pub fn pinned() { }\n")
    assert rust.built_adapter(_ADAPTER).parent.parent not in (program.parent.parent,
                                                             repinned.parent.parent)


def test_a_failed_build_is_one_line_naming_cargos_error(
        crate: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = 'echo "    Updating crates.io index"\n' \
              'echo "error: failed to get \\`redis\\` as a dependency of package \\`demo\\`"\n' \
              'exit 101'
    monkeypatch.setenv("PATH", f"{_cargo(tmp_path, failing)}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(CandidateUnusable) as raised:
        rust.built_adapter(_ADAPTER)
    assert str(raised.value) == ("--candidate port:demo: building its adapter failed (cargo "
                                 "exited 101): error: failed to get `redis` as a dependency of "
                                 "package `demo`")
    # Nothing marked as built: the next run tries again.
    with pytest.raises(CandidateUnusable):
        rust.built_adapter(_ADAPTER)
    assert len((tmp_path / "calls").read_text().splitlines()) == 2


def test_no_cargo_says_how_to_get_it(crate: Path, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with pytest.raises(CandidateUnusable, match=r"needs Rust's cargo .* not on PATH: install "
                                                r"Rust with rustup \(https://rustup.rs\)"):
        rust.built_adapter(_ADAPTER)


def test_with_the_cache_off_the_line_names_the_build_and_the_command_candidate(
        crate: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(resources.CACHE_ENV, "off")
    with pytest.raises(UsageError) as raised:
        rust.built_adapter(_ADAPTER)
    message = str(raised.value)
    assert f"cargo build --release --locked --color=never --manifest-path " \
           f"{crate / 'Cargo.toml'} --target-dir DIR" in message
    assert message.endswith("then run --candidate command:DIR/release/demo-adapter")


def test_the_port_names_are_the_bundled_ones() -> None:
    with pytest.raises(UsageError, match="the ports: bullmq-rs, bullrs"):
        CandidateSpec.parse("port:bullmq").build(10.0)
    assert {adapter.spec for adapter in rust.RUST_PORTS.values()} == {"port:bullrs",
                                                                     "port:bullmq-rs"}


@pytest.mark.parametrize("spec", ["bullmq-rust", "port:bullrs", "port:bullmq-rs"])
def test_without_cargo_the_run_stops_with_exit_4_and_one_line(spec: str,
                                                               tmp_path: Path) -> None:
    env = {**os.environ, "PATH": os.path.dirname(sys.executable),
           resources.CACHE_ENV: str(tmp_path / "cache")}
    done = cli("run", "--candidate", spec, env=env, cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert done.stderr.count("\n") == 1 and "needs Rust's cargo" in done.stderr, done.stderr
    assert done.stdout == ""
