"""`bullmq-rust` and the Rust community ports (`port:bullrs`, `port:bullmq-rs`): adapter programs
written in Rust, shipped as sources (`conformance/bundled/rust-bullmq/`, `rust-ports/<port>/`),
each driving one crate pinned by its `Cargo.lock` through that crate's public API.

The first use builds the adapter with `cargo build --release --locked` into the user cache, one
folder per version of its sources (an upgrade of the suite that pins another release builds
its own), showing cargo's progress on stderr; later runs start the built program at once. A
missing `cargo` or a failed build is one line (exit 4), never a verdict. With the cache off,
the line names the one command that builds it and the `command:` candidate that then runs it.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from conformance.candidates.adapter.command import CommandCandidate
from conformance.candidates.base import Candidate
from conformance.core.errors import CandidateUnusable, UsageError
from conformance.core.resources import cache_dir, rust_crate_source

#: Where a Rust toolchain comes from, for the line that says it is missing.
_GET_RUST = "install Rust with rustup (https://rustup.rs) or your system's cargo package"
#: The marker a finished build leaves beside its binary: a build that was interrupted leaves
#: none, and the next run lets cargo finish it.
_BUILT = "bullmq-conformance-built"


@dataclass(frozen=True)
class RustAdapter:
    """One bundled Rust adapter: its candidate `spec`, the bundled `folder` of its crate, the
    `binary` it builds, and the `crate` it drives (`bullmq-official 1.4.4`, for messages)."""

    spec: str
    folder: str
    binary: str
    crate: str

    def source(self) -> Path:
        """The adapter's crate, as shipped (verified against the installation)."""
        return rust_crate_source(self.folder, "Cargo.lock", "src/main.rs")


#: The official SDK's adapter.
BULLMQ_RUST = RustAdapter("bullmq-rust", "rust-bullmq", "bullmq-rust-adapter",
                          "bullmq-official 1.4.4")
#: The community ports, by the name `port:NAME` takes.
RUST_PORTS = {
    "bullrs": RustAdapter("port:bullrs", "rust-ports/bullrs", "bullrs-adapter", "bullrs 0.0.3"),
    "bullmq-rs": RustAdapter("port:bullmq-rs", "rust-ports/bullmq-rs", "bullmq-rs-adapter",
                             "bullmq-rs 2.2.0"),
}


#: The bundled library crates every adapter builds from by path (the protocol loop and the
#: clock pin).
SHARED_CRATES = ("rust-adapter",)


def _digest(crates: dict[str, Path]) -> str:
    """A digest of the manifests and sources of the adapter's crate and the shared ones it
    builds from, and of the adapter's lockfile (a shared crate's own lockfile, when it has
    one, plays no part in the build): the build's cache folder, so that a change to any of
    them builds anew."""
    hashed = hashlib.sha256()
    for name, root in sorted(crates.items()):
        files = [root / "Cargo.toml"]
        if name not in SHARED_CRATES:
            files.append(root / "Cargo.lock")
        files += sorted((root / "src").rglob("*.rs"))
        for path in files:
            hashed.update(f"{name}/{path.relative_to(root).as_posix()}".encode() + b"\0")
            hashed.update(path.read_bytes() + b"\0")
    return hashed.hexdigest()[:12]


def build_command(source: Path, target: Path) -> list[str]:
    """The cargo command that builds an adapter from `source` into the target folder `target`."""
    return ["cargo", "build", "--release", "--locked", "--color=never",
            "--manifest-path", str(source / "Cargo.toml"), "--target-dir", str(target)]


def built_adapter(adapter: RustAdapter) -> Path:
    """The adapter's program, built on first use (progress on stderr).

    Raises CandidateUnusable (one line) when cargo is missing or the build fails, and
    UsageError when the cache is off (naming the command to build it yourself).
    """
    source = adapter.source()
    base = cache_dir()
    flag = f"--candidate {adapter.spec}"
    if base is None:
        target = Path("DIR")
        command = shlex.join(build_command(source, target))
        raise UsageError(f"{flag} builds its adapter into the cache, which is off: build it once "
                         f"with `{command}`, then run --candidate "
                         f"command:{target / 'release' / adapter.binary}")
    crates = {adapter.folder: source,
              **{name: rust_crate_source(name, "src/lib.rs") for name in SHARED_CRATES}}
    target = base / f"{adapter.folder.replace('/', '-')}-{_digest(crates)}"
    program = target / "release" / adapter.binary
    if (target / _BUILT).is_file() and program.is_file():
        return program
    if shutil.which("cargo") is None:
        raise CandidateUnusable(f"{flag} needs Rust's cargo to build its adapter once, and "
                                f"cargo is not on PATH: {_GET_RUST}")
    _build(adapter, source, target)
    if not program.is_file():
        raise CandidateUnusable(f"{flag}: cargo built no {adapter.binary} in {target}")
    (target / _BUILT).write_text(f"{adapter.crate}\n", encoding="utf-8")
    return program


def _build(adapter: RustAdapter, source: Path, target: Path) -> None:
    """Run cargo, passing its progress lines on to stderr; CandidateUnusable when it fails."""
    command = build_command(source, target)
    print(f"bullmq-conformance: building the {adapter.spec} adapter ({adapter.crate}) once, "
          f"into {target}: {shlex.join(command)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=40)
    try:
        target.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as exc:
        raise CandidateUnusable(f"--candidate {adapter.spec}: cannot run cargo: "
                                f"{exc.strerror}") from None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            tail.append(line.rstrip())
            print(f"  {line.rstrip()}", file=sys.stderr, flush=True)
        code = process.wait()
    except BaseException:  # Ctrl-C: cargo stops too; its finished units stay for next time
        process.kill()
        process.wait()
        raise
    if code != 0:
        errors = [line for line in tail if line.startswith("error")]
        cause = errors[0] if errors else (tail[-1] if tail else "no output")
        raise CandidateUnusable(f"--candidate {adapter.spec}: building its adapter failed "
                                f"(cargo exited {code}): {cause}")
    print(f"bullmq-conformance: built the {adapter.spec} adapter in "
          f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)


def rust_candidate(adapter: RustAdapter, timeout: float) -> Candidate:
    """The adapter's candidate (built on first use), each op limited to `timeout` seconds."""
    program = built_adapter(adapter)
    return CommandCandidate(shlex.quote(str(program)), label=adapter.spec, timeout=timeout)
