"""A run whose Redis was never started stops the same way whichever item meets that first: a
vector or the `properties` area (one error, `RedisNotStarted`, raised by `Run.started_server`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# `bullmq-conformance ARGV` in a process whose runs skip starting Redis (and the candidate).
PROBE = """
import sys
from conformance.cli import main
from conformance.run.session import Run
Run.start = lambda self: None
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("selected", ["key-naming", "properties"])
def test_a_run_without_its_redis_stops_with_exit_3(selected: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, "run", "-q", "--examples", "1", "-k",
                           selected], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.splitlines()[-1] == \
        "bullmq-conformance: infrastructure error: Redis was not started"
