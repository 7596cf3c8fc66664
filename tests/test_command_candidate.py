"""The command: candidate: protocol validation, and a broken adapter never breaks the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conformance.candidates.adapter.command import reply_problem
from tests.cli_helpers import cli

FAULTY = Path(__file__).parent / "adapters" / "faulty.py"
#: Three vectors of the current protocol (their older ranges would only be skipped).
SELECT = ("(band-bump/2-same-ms or band-bump/3-same-ms or promote-range/promote-op-missing)"
          " and not until")


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("garbage", "adapter wrote a line that is not JSON: 'this is not json'"),
        ("crash", "adapter exited with code 3; stderr: about to crash"),
        pytest.param("hang", "adapter sent no reply within 1 s; stderr: thinking very hard",
                     marks=pytest.mark.slow),
        ("badseq", "adapter answered seq 8 to request seq 1"),
        ("schema", "reply does not match the adapter protocol"),
        ("errored", "ValueError: nope"),
        ("non-utf8", "adapter wrote bytes that are not UTF-8: b'\\xff\\xfe{\"ok\": true"),
    ],
)
def test_faulty_adapter_makes_vectors_errored_and_run_goes_on(
        tmp_path: Path, redis_url: str, mode: str, cause: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "--adapter-timeout", "1", "-k", SELECT,
               "--candidate", f"command:{sys.executable} {FAULTY} {mode}",
               "--report-json", str(report))
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Traceback (most recent call last)" not in proc.stdout  # e.g. from a reader thread
    results = json.loads(report.read_text())["results"]
    assert len(results) == 3  # every selected vector ran: the adapter was restarted
    assert all(r["outcome"] == "errored" for r in results), results
    assert all(cause in r["message"] for r in results), results[0]["message"]


def test_skipped_reply_skips_the_vector(tmp_path: Path, redis_url: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "-k", SELECT, "--candidate",
               f"command:{sys.executable} {FAULTY} skip", "--report-json", str(report))
    # Every vector skipped: nothing was judged, which is no pass (tests/test_gate.py).
    assert proc.returncode == 1, proc.stdout[-2000:]
    results = json.loads(report.read_text())["results"]
    assert len(results) == 3
    assert {r["outcome"] for r in results} == {"skipped"}
    assert all("not supported by faulty" in r["message"] for r in results), results


def test_missing_adapter_program_is_errored(tmp_path: Path, redis_url: str) -> None:
    report = tmp_path / "r.json"
    proc = cli("run", "-q", "--redis", redis_url, "-k", "band-bump/2-same-ms and not until",
               "--candidate", "command:/nonexistent/adapter --flag",
               "--report-json", str(report))
    assert proc.returncode == 1
    [result] = json.loads(report.read_text())["results"]
    assert result["outcome"] == "errored" and "cannot start adapter" in result["message"]


def test_adapter_check_reports_protocol_errors(redis_url: str) -> None:
    proc = cli("adapter", "check", f"{sys.executable} {FAULTY} schema", "--redis", redis_url)
    assert proc.returncode == 1
    assert "ok   start" in proc.stdout
    assert "FAIL adapter reply does not match the adapter protocol" in proc.stdout
    proc = cli("adapter", "check", f"{sys.executable} {FAULTY} skip", "--redis", redis_url)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.count("skipped: not supported by faulty") == 10


def test_adapter_check_takes_null_from_pause_and_resume_only(redis_url: str) -> None:
    # Before 6.0.0 the pause script returns nothing: a port of those scripts answers null.
    proc = cli("adapter", "check", f"{sys.executable} {FAULTY} pause-null", "--redis", redis_url)
    assert proc.returncode == 0, proc.stdout
    assert "ok   pause(): result null" in proc.stdout
    assert "ok   resume(): result null" in proc.stdout
    proc = cli("adapter", "check", f"{sys.executable} {FAULTY} pause-text", "--redis", redis_url)
    assert proc.returncode == 1
    assert 'FAIL pause(): result should be a JSON integer or null, got "0"' in proc.stdout


def test_reply_schema() -> None:
    assert reply_problem({"seq": 1, "result": {"job": None, "ttl": 0, "next": 5}}) is None
    assert reply_problem({"seq": 1, "result": "7"}) is None
    assert reply_problem({"seq": 1, "skipped": True, "reason": "x"}) is None
    assert reply_problem({"seq": 1, "result": {"job": 1, "ttl": 0, "next": 0}}) is not None
    assert reply_problem({"seq": 1, "errored": True}) is not None
    assert reply_problem({"result": "1"}) is not None
