"""The command line in a child process, as a user runs it: `python -m conformance ARGS`.

The one home of that command for every test: `cli` runs it to the end, `command` is its argv
for a test that starts it in the background (`subprocess.Popen`)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

#: The checkout (the tests run from it; the README's relative paths are relative to it).
ROOT = Path(__file__).resolve().parents[1]
#: Long enough for a full run of the vectors on a loaded machine; a hung child still fails.
TIMEOUT = 300.0


def command(*args: str) -> list[str]:
    """The argv of `bullmq-conformance ARGS` run by this Python (the one the tests import)."""
    return [sys.executable, "-m", "conformance", *args]


def cli(*args: str, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
        timeout: float = TIMEOUT, input: str | None = None,
        check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `bullmq-conformance ARGS` to its end and capture its output as text.

    `cwd` and `env` default to the test process's own; `input` is fed to stdin (else it is
    inherited); `check` raises on a non-zero exit, which most tests assert on themselves."""
    return subprocess.run(command(*args), cwd=cwd, env=env, input=input, capture_output=True,
                          text=True, timeout=timeout, check=check)
