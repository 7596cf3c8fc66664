"""ci/same_reports.py, which CI uses to hold the pipelined path's reports to the serial path's:
clock readings and run ids are masked, any other difference fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _report(path: Path, outcome: str, message: str) -> Path:
    document: dict[str, Any] = {
        "totals": {outcome: 1},
        "results": [{"id": "a/b", "area": "a", "outcome": outcome, "message": message}]}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "ci" / "same_reports.py"), str(a), str(b)],
                          capture_output=True, text=True, check=False)


def test_clock_readings_and_run_ids_are_masked(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", "failed", 'lock: {"pttl": 30000} in bmqc-0a1b2c3d-000001')
    b = _report(tmp_path / "b.json", "failed", 'lock: {"pttl": 29980} in bmqc-99ffee00-000001')
    proc = _compare(a, b)
    assert proc.returncode == 0 and "same reports: 1 vectors (failed)" in proc.stdout


def test_another_outcome_or_message_fails(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", "failed", "1 difference(s) in Redis state")
    assert _compare(a, _report(tmp_path / "b.json", "passed", "")).returncode == 1
    c = _report(tmp_path / "c.json", "failed", "2 difference(s) in Redis state")
    proc = _compare(a, c)
    assert proc.returncode == 1 and "a/b: serial" in proc.stderr
    d = _report(tmp_path / "d.json", "failed", "1 difference(s) in Redis state in bmqc-1-000002")
    e = _report(tmp_path / "e.json", "failed", "1 difference(s) in Redis state in bmqc-1-000003")
    assert _compare(d, e).returncode == 1  # the queue number is not masked, only the run id


def test_the_properties_rate_is_masked_but_not_its_examples(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", "passed", "25 examples, seed 1, 38.1/s")
    b = _report(tmp_path / "b.json", "passed", "25 examples, seed 1, 41.7/s")
    assert _compare(a, b).returncode == 0
    c = _report(tmp_path / "c.json", "passed", "24 examples, seed 1, 38.1/s")
    assert _compare(a, c).returncode == 1
