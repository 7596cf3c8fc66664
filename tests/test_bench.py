"""`bench`'s failing-candidate figures: the built-in defect fails the big vectors (never errors)
with diffs that differ in nearly every entry of the largest key, and the line is printed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conformance import cli, servers
from conformance.errors import Exit
from conformance.outcomes import Outcome
from conformance.runner import QueueNames, run_vector
from conformance.selftest import bench
from conformance.selftest.mutant_catalog import EVERY_ENTRY_DIFFERS
from conformance.session import profile_for
from conformance.vectors import Vector

#: The largest keys of the vector set: a 7001-item list, 4096/4097-job bands, 1000 events.
BIG = ("pause/legacy-7001-leaves-one", "band-bump/4096-fills-band", "band-bump/4097-saturates",
       "promote-range/exactly-1000-due", "promote-range/1001-due")


@pytest.fixture(scope="module")
def big_vectors(all_vectors: list[Vector]) -> list[Vector]:
    found = [v for v in all_vectors if v.id in BIG]
    assert len(found) == len(BIG)
    return found


def _size(entry: dict[str, Any]) -> int:
    body = next(iter(entry.values()))
    return len(body) if isinstance(body, list | dict) else 1


def test_the_defect_fails_the_largest_key_of_each_big_vector_nearly_throughout(
        big_vectors: list[Vector], redis_server: servers.ServerInfo, tmp_path: Path) -> None:
    candidate = bench.failing_candidate(tmp_path)
    client = servers.client_for(redis_server)
    for vector in big_vectors:
        verdict = run_vector(vector, candidate, client, profile_for("bullmq"), QueueNames())
        assert verdict.outcome is Outcome.FAILED, (vector.id, verdict.message)
        largest = max(vector.keys, key=lambda suffix: _size(vector.keys[suffix]))
        header = verdict.diff[verdict.diff.index(f"{largest}: "
                                                 f"{next(iter(vector.keys[largest]))} differs") + 1]
        count = re.match(r"  (\d+) ", header)
        assert count, header
        assert int(count.group(1)) >= 0.99 * _size(vector.keys[largest]), (vector.id, header)
        assert len(verdict.diff) < 100, vector.id  # capped, however much differs


def test_bench_prints_the_failing_candidate_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str,
        big_vectors: list[Vector]) -> None:
    failing_dirs: list[Path] = []

    def run_seconds(redis_spec: str, *extra: str, exit_code: int = Exit.OK) -> float:
        if "--candidate" in extra:
            spec = extra[extra.index("--candidate") + 1]
            directory = Path(spec.removeprefix("scripts:"))
            lua = (directory / "includes" / "storeJob.lua").read_text(encoding="utf-8")
            assert '"jobId", job.id, "name", name' not in lua  # the defect is applied
            assert exit_code == Exit.FAILED
            failing_dirs.append(directory)
            return 2.5
        assert exit_code == Exit.OK
        return 2.0

    # The new-process figures are faked; the in-process passes run for real on the big vectors.
    monkeypatch.setattr(bench, "_run_seconds", run_seconds)
    monkeypatch.setattr(bench, "_plugin_overhead", lambda argv: (0.3, 0.3))
    monkeypatch.setattr(bench, "_cold_load_seconds", lambda directory: 0.5)
    monkeypatch.setattr(bench, "iter_vectors", lambda files: iter(big_vectors))
    assert cli.main(["bench", "--redis", redis_url, "--repeat", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(out) if line.startswith("  failing candidate"))
    assert EVERY_ENTRY_DIFFERS.name in out[start] and "target: failing <= 1.5x" in out[start]
    harness, vectors_only, default = out[start + 1:start + 4]
    assert harness.startswith("    harness, in process")
    assert f"({len(BIG)} of {len(BIG)} vectors failed, none errored)" in harness
    assert re.search(r"passing +\d+\.\d\d s, failing +\d+\.\d\d s, ratio \d+\.\d\dx", harness)
    assert vectors_only == ("    full run, --examples 0    : passing   2.00 s, failing   2.50 s, "
                            "ratio 1.25x")
    assert default.startswith("    full default run          : passing   2.00 s, failing   "
                              "2.50 s, ratio 1.25x")
    assert failing_dirs and not any(d.exists() for d in failing_dirs)  # cleaned up


def test_an_erroring_vector_ends_the_failing_pass(
        big_vectors: list[Vector], redis_server: servers.ServerInfo, tmp_path: Path) -> None:
    candidate = bench.failing_candidate(tmp_path)
    (candidate.directory / "pause-7.lua").unlink()  # legacy-7001 resumes: a candidate error
    with pytest.raises(SystemExit, match="failing candidate: pause/legacy-7001-leaves-one "
                                         "errored"):
        bench.failing_pass(big_vectors, servers.client_for(redis_server), candidate)
