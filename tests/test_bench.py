"""`bench`'s failing-candidate figures: the built-in defect fails the big vectors (never errors)
with diffs that differ in nearly every entry of the largest key, and the line is printed."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from conformance import cli, servers
from conformance.checks import bench
from conformance.checks import bench_figures as figures
from conformance.checks.mutant_catalog import EVERY_ENTRY_DIFFERS
from conformance.core.errors import Exit
from conformance.core.outcomes import Outcome
from conformance.core.queues import QueueNames
from conformance.run.serial import run_vector
from conformance.run.spec import profile_for
from conformance.vectors import Vector
from reference_impl import versions
from tests.fault_helpers import local_spec

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
        verdict = run_vector(vector, candidate, client, profile_for("bullmq"), QueueNames(),
                             protocol=versions.CURRENT)
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
    monkeypatch.setattr(figures, "mutants_seconds",
                        lambda scripts, spec: 4.0 if scripts == "reference" else None)
    crowded_specs: list[str] = []

    def crowded_runs(foreign: int, timeout: float, spec: str) -> list[figures.Crowded]:
        crowded_specs.append(spec)
        return [figures.Crowded("--examples 0", foreign, 2.0, 2.2, timeout),
                figures.Crowded("default run", foreign, 2.0, None, timeout)]

    monkeypatch.setattr(figures, "crowded_runs", crowded_runs)
    # The clients' runs are faked too (timed for real they are four full runs, and a cold
    # cargo build where the Rust adapter is not built yet): test_sdk_seconds_* time them.
    monkeypatch.setattr(bench, "_sdk_seconds",
                        lambda redis_spec, repeat: {"bullmq-node": 3.0, "bullmq-rust": 3.6})
    assert cli.main(["bench", "--redis", redis_url, "--repeat", "1", "--foreign-keys", "5000",
                     "--foreign-timeout", "30"]) == 0
    assert crowded_specs == ["local"]  # beside a url: server, servers of our own are local ones
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    _check_scale_lines(out)
    start = next(i for i, line in enumerate(out) if line.startswith("  failing candidate"))
    assert EVERY_ENTRY_DIFFERS.name in out[start] and "target: failing <= 1.5x" in out[start]
    harness, vectors_only, default = out[start + 1:start + 4]
    assert harness.startswith("    harness, one by one")
    assert f"({len(BIG)} of {len(BIG)} vectors failed, none errored)" in harness
    assert re.search(r"passing +\d+\.\d\d s, failing +\d+\.\d\d s, ratio \d+\.\d\dx", harness)
    assert vectors_only == ("    full run, --examples 0    : passing   2.00 s, failing   2.50 s, "
                            "ratio 1.25x")
    assert default.startswith("    full default run          : passing   2.00 s, failing   "
                              "2.50 s, ratio 1.25x")
    assert failing_dirs and not any(d.exists() for d in failing_dirs)  # cleaned up
    scaled = next(i for i, line in enumerate(out) if line.startswith("  this machine:"))
    assert out[scaled + 1].startswith("    scaled to that machine (an estimate): full default "
                                      "run ")
    assert "mutants reference " in out[scaled + 1] and "mutants official" not in out[scaled + 1]
    clients = out.index("  official clients, run --examples 0 (new processes, built and warm):")
    assert out[clients + 1:clients + 3] == [
        "    bullmq-node :   3.00 s",
        "    bullmq-rust :   3.60 s, 1.20x bullmq-node (target <= 1.5)"]
    # A step line as each long step starts, on stderr: the figures come at the end.
    steps = captured.err.splitlines()
    assert steps[0] == "bench: loading the vectors..." and "bench: mutants..." in steps


def test_the_scaled_figures_divide_by_the_floors_ratio() -> None:
    # A floor twice the targets' machine's: every figure halves; one not measured is left out.
    floor = figures.TARGET_MACHINE_FLOOR_MS * 2
    head, scaled = figures.scaled_lines(floor, {"full default run": 3.0, "mutants x": 9.0,
                                                "mutants y": None})
    assert "2.00x the 0.238 ms" in head
    assert scaled == "    scaled to that machine (an estimate): full default run 1.50 s, " \
                     "mutants x 4.50 s"


def test_an_erroring_vector_ends_the_failing_pass(
        big_vectors: list[Vector], redis_server: servers.ServerInfo, tmp_path: Path) -> None:
    candidate = bench.failing_candidate(tmp_path)
    (candidate.directory / "pause-7.lua").unlink()  # legacy-7001 resumes: a candidate error
    with pytest.raises(SystemExit, match="failing candidate: pause/legacy-7001-leaves-one "
                                         "errored"):
        bench.failing_pass(big_vectors, servers.client_for(redis_server), candidate)


def _check_scale_lines(out: list[str]) -> None:
    """The floor, the ratios, cost per vector, mutants and the crowded url: run, as printed
    (the figures themselves are timings, not checked)."""
    def line(prefix: str) -> str:
        return next(text for text in out if text.startswith(prefix))

    assert re.search(r"bare pipelined replay +: +\d+\.\d{3} s .*2000 to a pipeline: \d+ round "
                     r"trips\)$", line("  bare pipelined replay"))
    assert line("  ratio harness / bare pipelined").endswith("(target <= 1.5)")
    assert line("  full default run").endswith("(target <= 1.5)")
    start = out.index("  cost per vector as the set grows (copies under fresh ids, in process):")
    per_copy = len(BIG)
    for offset, count in enumerate(figures.SCALES, 1):
        assert re.fullmatch(rf"    {count}x +{count * per_copy} vectors: +\d+\.\d\d s, +"
                            r"\d+\.\d{3} ms/vector", out[start + offset]), out[start + offset]
    assert re.fullmatch(r"    4x / 1x per vector: \d\.\d\d \(target: flat within 20%\)",
                        out[start + 4])
    start = out.index("  mutation self-test, all catalog mutants (new process each; "
                      "target <= 5 s):")
    assert out[start + 1:start + 3] == ["    mutants --scripts reference :   4.00 s",
                                        "    mutants --scripts official  : not installed, "
                                        "skipped"]
    start = out.index("  url: run, server with 5,000 foreign keys vs empty (new processes; "
                      "target <= 1.5x each):")
    assert out[start + 1:start + 3] == [
        "    --examples 0 : empty   2.00 s, crowded   2.20 s, ratio  1.10x",
        "    default run  : empty   2.00 s, crowded stopped after 30 s (> 15x; --foreign-keys "
        "and --foreign-timeout choose)"]


def test_copies_run_under_fresh_ids(big_vectors: list[Vector]) -> None:
    grown = figures.copies(big_vectors, 3)
    assert len(grown) == 3 * len(big_vectors)
    assert len({v.id for v in grown}) == len(grown)
    assert grown[:len(big_vectors)] == big_vectors
    assert grown[-1].id == f"{big_vectors[-1].id}#3" and grown[-1].keys == big_vectors[-1].keys


def test_the_pipelined_replay_sends_every_command_in_order_2000_at_a_time(
        redis_server: servers.ServerInfo) -> None:
    client = servers.client_for(redis_server)
    key = "bmqc-bench-test:list"
    log: figures.Recorded = [("cmd", [(("RPUSH", key, i), {})]) for i in range(2500)]
    log += [("pipe", [(("RPUSH", key, i), {}) for i in range(2500, 4500)]),
            ("cmd", [(("DEL", "x"), {})])]
    try:
        assert figures.replay_pipelined(client, log) == 3
        assert client.lrange(key, 0, -1) == [str(i) for i in range(4500)]
    finally:
        client.delete(key)


def test_the_crowded_url_runs_beside_the_empty_ones() -> None:
    # Real servers and runs, small: 1,000 foreign keys, one area and the properties item.
    found = figures.crowded_runs(1000, 120.0, "-k", "key-naming or properties",
                                 spec=local_spec())
    assert [run.label for run in found] == ["--examples 0", "default run"]
    for run in found:
        assert run.foreign == 1000 and run.empty > 0 and run.crowded is not None, run
        assert run.exit == 0, run
    lines = figures.crowded_lines(found)
    assert lines[0] == ("  url: run, server with 1,000 foreign keys vs empty (new processes; "
                        "target <= 1.5x each):")
    for label, line in zip(("--examples 0", "default run "), lines[1:], strict=True):
        assert re.fullmatch(rf"    {label} : empty +\d+\.\d\d s, crowded +\d+\.\d\d s, "
                            r"ratio +\d+\.\d\dx", line), line


def test_the_default_run_beside_the_vectors_alone_on_the_same_servers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Both runs time the same empty server, then the same crowded one; only the vectors
    alone say `--examples 0` (the default run has its properties item)."""
    ran: list[tuple[str, ...]] = []
    crowded_urls: list[str] = []
    real_server = figures.crowded_server

    @contextlib.contextmanager
    def server(foreign: int, spec: str = "local") -> Iterator[str]:
        with real_server(foreign, spec) as url:
            if foreign:
                crowded_urls.append(url)
            yield url

    def cli_run(*argv: str, timeout: float | None = None) -> tuple[float, int, str]:
        """Faked times: 2 s empty, 3 s crowded, where the default run fails."""
        ran.append(argv)
        if argv[-1] not in crowded_urls:
            return 2.0, 0, ""
        return (3.0, 0, "") if "--examples" in argv else (3.0, 1, "1 failed, 444 passed")

    monkeypatch.setattr(figures, "_cli_run", cli_run)
    monkeypatch.setattr(figures, "crowded_server", server)
    found = figures.crowded_runs(50, 9.0, "-k", "x", spec=local_spec())
    assert [argv[:-2] for argv in ran] == 2 * [
        ("run", "-q", "--seed", "1", "-k", "x", "--examples", "0"),
        ("run", "-q", "--seed", "1", "-k", "x")]
    servers_used = [argv[-1] for argv in ran]
    assert servers_used[0] == servers_used[1] != servers_used[2] == servers_used[3]
    assert figures.crowded_lines(found)[1:] == [
        "    --examples 0 : empty   2.00 s, crowded   3.00 s, ratio  1.50x",
        "    default run  : empty   2.00 s, crowded   3.00 s, ratio  1.50x, exit 1, not 0: a "
        "false verdict on the reference (1 failed, 444 passed)"]


def test_the_crowded_lines_without_foreign_keys() -> None:
    found = [figures.Crowded(label, 0, 1.0, None, 9.0) for label, _ in figures.CROWDED_RUNS]
    assert figures.crowded_lines(found) == [
        "  url: run, server with 0 foreign keys vs empty (new processes; target <= 1.5x each):",
        "    --examples 0 : empty   1.00 s (crowded run skipped: --foreign-keys 0)",
        "    default run  : empty   1.00 s (crowded run skipped: --foreign-keys 0)"]


def test_the_crowded_server_holds_only_foreign_keys_no_run_queue_can_match() -> None:
    with figures.crowded_server(2500, local_spec()) as spec:
        client = redis.Redis.from_url(spec.removeprefix("url:"), decode_responses=True)
        keys = set(client.scan_iter(count=10_000))
        client.close()
    assert keys == {f"foreign:{i}" for i in range(2500)}
    assert not any("bmqc-" in key for key in keys)  # a run's queues are bmqc-<run id>-<n>


def test_a_negative_foreign_key_count_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "--foreign-keys", "-1"]) == Exit.USAGE
    assert capsys.readouterr().err.strip().count("\n") == 0


def _fake_runs(monkeypatch: pytest.MonkeyPatch,
               runs: dict[str, list[tuple[float, int, str]]]) -> list[tuple[str, ...]]:
    """`bench._timed_run` answering from `runs` (per candidate: seconds, exit code, stderr, in
    call order); the calls made, in order."""
    calls: list[tuple[str, ...]] = []

    def timed_run(redis_spec: str, *extra: str) -> tuple[float, subprocess.CompletedProcess[str]]:
        calls.append(extra)
        seconds, code, err = runs[extra[extra.index("--candidate") + 1]].pop(0)
        return seconds, subprocess.CompletedProcess([], code, "", err)

    monkeypatch.setattr(bench, "_timed_run", timed_run)
    return calls


def test_sdk_seconds_are_the_best_warm_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # The first run of each (it may build the adapter) is not timed; exit 1 (known failures)
    # is timed like 0.
    calls = _fake_runs(monkeypatch, {"bullmq-node": [(9.0, 0, ""), (3.2, 0, ""), (3.0, 0, "")],
                                     "bullmq-rust": [(150.0, 1, ""), (4.1, 1, ""), (4.5, 1, "")]})
    assert bench._sdk_seconds("local", 2) == {"bullmq-node": 3.0, "bullmq-rust": 4.1}
    assert calls == [("--examples", "0", "--candidate", "bullmq-node")] * 3 + [
        ("--examples", "0", "--candidate", "bullmq-rust")] * 3


def test_sdk_seconds_name_a_client_that_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_runs(monkeypatch, {"bullmq-node": [(1.0, 4, "bullmq-conformance: run npm ci first\n")],
                             "bullmq-rust": [(2.0, 0, ""), (2.5, 0, "")]})
    assert bench._sdk_seconds("local", 1) == {
        "bullmq-node": "not timed: exit 4, bullmq-conformance: run npm ci first",
        "bullmq-rust": 2.5}
