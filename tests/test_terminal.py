"""`run`'s terminal: none of pytest's internals, each error once, and -v, -x, --lf, --ff."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.servers import ServerInfo
from conformance.vectors import Vector
from tests.cli_helpers import cli
from tests.fault_helpers import FAULTY_ADAPTER

CRASHING = f"command:{sys.executable} {FAULTY_ADAPTER} crash"
#: pytest's own words, which mean nothing to a port author.
INTERNALS = ("rootdir", "configfile", "inifile", "plugins:", "collected", "platform linux",
             "_pytest", "conformance/plugin/items.py", "--full-trace", "SKIPPED [",
             "short test summary",
             "test session starts", "Traceback")


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`run ARGS` from `tmp_path`, with a cache of its own (what --lf remembers)."""
    env = {**os.environ, "BULLMQ_CONFORMANCE_CACHE_DIR": str(tmp_path / "cache")}
    return cli("run", "--examples", "0", *args, cwd=tmp_path, env=env)


def test_no_pytest_internals_in_a_mixed_run(tmp_path: Path, redis_url: str,
                                            every_vector: list[Vector]) -> None:
    proc = run(tmp_path, "--redis", redis_url, "--candidate", CRASHING, "-k", "band-bump or "
               "cluster or properties", "--examples", "3")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert [word for word in INTERNALS if word in out] == []
    assert re.search(r"^\d+ selected \(\d+ deselected\)$", proc.stdout, re.M), proc.stdout
    # skipped ones are grouped by reason: the cluster vectors (untagged profile), and the
    # older protocol ranges together; the properties row has its label
    selected = [v for v in every_vector if v.area in ("band-bump", "cluster")]
    older = [v for v in selected if v.span.until is not None]
    untagged = [v for v in selected if "hash-tag" in v.needs and v.span.until is None]
    assert older and untagged
    assert f"--- not applicable ({len(older) + len(untagged)}) ---" in proc.stdout
    assert re.search(rf"^ *{len(untagged)} x needs hash-tag: ", proc.stdout, re.M), proc.stdout
    assert re.search(rf"^ *{len(older)} x holds for another protocol range, not the protocol "
                     r"judged \(6\.7\.0\)$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^properties [EF.]$", proc.stdout, re.M), proc.stdout
    assert re.search(r"^\d+ errored of \d+ applicable; \d+ not applicable \(other protocol "
                     r"ranges, unmet needs\) in [\d.]+ s$", proc.stdout, re.M), proc.stdout


def test_verbose_names_every_result(tmp_path: Path, redis_url: str) -> None:
    proc = run(tmp_path, "--redis", redis_url, "-v", "-k", "band-bump")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.endswith(" PASSED")]
    assert len(lines) == 20
    assert all(line.startswith("vectors/band-bump.yaml::band-bump/") for line in lines)


def test_exitfirst_stops_at_the_first_errored_vector(tmp_path: Path, redis_url: str) -> None:
    proc = run(tmp_path, "--redis", redis_url, "--candidate", CRASHING, "-x", "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1].startswith("1 errored of 1 applicable in ")


def test_last_failed_and_failed_first(tmp_path: Path, redis_url: str,
                                     every_vector: list[Vector]) -> None:
    """A crashing adapter errors band-bump's vectors (its older protocol ranges are skipped,
    not errored); --lf then reruns just those, and --ff runs them before the rest. Nothing is
    written to the current folder."""
    first = run(tmp_path, "--redis", redis_url, "--candidate", CRASHING, "-k", "band-bump")
    assert first.returncode == 1
    again = run(tmp_path, "--redis", redis_url, "--lf", "-v")
    assert again.returncode == 0, again.stdout + again.stderr
    ran = [line.split("::")[1].split()[0] for line in again.stdout.splitlines()
           if line.startswith("vectors/")]
    assert len(ran) == 20 and all(vid.startswith("band-bump/") for vid in ran)
    assert f"20 selected ({len(every_vector) - 20} deselected)" in again.stdout
    # Both passed now: --ff has nothing to put first, so it runs all in file order; make
    # band-bump fail again, then check the order.
    run(tmp_path, "--redis", redis_url, "--candidate", CRASHING, "-k", "next-wake")
    ordered = run(tmp_path, "--redis", redis_url, "--ff", "-v")
    ids = [line.split("::")[1].split()[0] for line in ordered.stdout.splitlines()
           if line.startswith("vectors/")]
    failed_before = [i for i in ids if i.startswith("next-wake/") and ".until-" not in i]
    assert failed_before and ids[:len(failed_before)] == failed_before
    assert len(ids) == len(every_vector)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]


@pytest.mark.slow
def test_an_infrastructure_error_is_printed_once(tmp_path: Path) -> None:
    from tests.fault_helpers import free_port

    proc = run(tmp_path, "--redis", f"url:redis://127.0.0.1:{free_port()}/0")
    assert proc.returncode == 3
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "infrastructure error" in lines[0], lines


@pytest.mark.parametrize("extra", [[], ["-n", "2"], ["-k", "properties", "--examples", "30"]],
                         ids=["serial", "two-workers", "properties"])
def test_an_adapter_that_cannot_start_stops_the_run_with_exit_4(
        tmp_path: Path, own_server: ServerInfo, extra: list[str]) -> None:
    # A server of the module's own: on the session's, another test's writes while the vectors
    # run would be reported (rightly) as foreign writes, a line more on stderr.
    proc = run(tmp_path, "--redis", f"url:{own_server.url}", "--candidate",
               "command:/nonexistent/adapter", *extra)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        "bullmq-conformance: candidate unusable: adapter /nonexistent/adapter failed to start "
        "twice in a row: it cannot be run: No such file or directory"]
    assert "Traceback" not in proc.stdout


def test_last_failed_needs_the_cache(tmp_path: Path, redis_url: str) -> None:
    env = {**os.environ, "BULLMQ_CONFORMANCE_CACHE_DIR": "off"}
    proc = cli("run", "--redis", redis_url, "--lf", env=env, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["bullmq-conformance: --lf and --ff remember failures in "
                                        "the cache, which BULLMQ_CONFORMANCE_CACHE_DIR=off "
                                        "turns off"]
