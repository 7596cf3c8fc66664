"""examples/textbook: the textbook delayed queue fails exactly the vectors its expectations list."""

from __future__ import annotations

import ast
import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from conformance.plugin.items import PROPERTIES_ID
from conformance.vectors import Vector
from conformance.vectors.expectations import load
from reference_impl.ops import MoveToDelayed, Pause, Resume
from tests.cli_helpers import ROOT, cli

ADAPTER = "examples/textbook/adapter.py"  # relative to ROOT, as the README shows it
EXPECT = "examples/textbook/expectations.yaml"


def candidate() -> str:
    return f"command:{shlex.join([sys.executable, ADAPTER])}"


def test_adapter_uses_only_stdlib_and_redis() -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / ADAPTER).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - {"redis"} <= set(sys.stdlib_module_names), imported


def test_failures_are_exactly_the_expected_ones(
        redis_url: str, all_vectors: list[Vector], tmp_path: Path,
        profile_skips: Callable[[str], set[str]], adapter_v1_skips: set[str]) -> None:
    report = tmp_path / "report.json"
    proc = cli("run", "-q", "--redis", redis_url, "--candidate", candidate(),
               "--report-json", str(report), cwd=ROOT, timeout=600)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(report.read_text(encoding="utf-8"))["results"]
    failed = {r["id"] for r in results if r["outcome"] in ("failed", "errored")}
    assert not any(r["outcome"] == "errored" for r in results), "the adapter crashed"

    expected = load(ROOT / EXPECT)
    listed = {v.id for v in all_vectors if expected.match(v.id) is not None}
    listed |= {PROPERTIES_ID} if expected.match(PROPERTIES_ID) else set()
    assert failed == listed, {"unlisted failures": sorted(failed - listed),
                              "listed but not failing": sorted(listed - failed)}
    assert all(e.outcome == "fail" for e in expected.entries)
    # Skipped, and so not listed: the older protocol ranges, the other profile's vectors, the
    # cluster vectors, and every vector using an op the pattern has no equivalent for (the
    # adapter replies `skipped` to them).
    skipped = {r["id"] for r in results if r["outcome"] == "skipped"}
    # and, speaking adapter protocol 1, the worker half's vectors.
    assert skipped == profile_skips("bullmq") | adapter_v1_skips | {
        v.id for v in all_vectors
        if any(isinstance(op, MoveToDelayed | Pause | Resume) for op in v.when)}

    # The headline difference: raw fire-time scores lose the same-millisecond band.
    band = {i for i in failed if i.startswith("band-bump/")}
    assert {"band-bump/2-same-ms", "band-bump/3-same-ms"} <= band
    by_id = {r["id"]: r for r in results}
    assert "expected score 6963200020480001" in by_id["band-bump/2-same-ms"]["message"]
    # Some vectors still pass: the design is wrong in its numbers, not in everything.
    assert any(r["outcome"] == "passed" for r in results)


def test_run_with_expectations_exits_0(redis_url: str, all_vectors: list[Vector],
                                       tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = cli("run", "-q", "--redis", redis_url, "--candidate", candidate(),
               "--expect", EXPECT, "--report-json", str(report), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    totals = json.loads(report.read_text(encoding="utf-8"))["totals"]
    assert totals["failed"] == totals["errored"] == 0, totals
    expected = load(ROOT / EXPECT)
    listed = sum(1 for v in all_vectors if expected.match(v.id))
    assert totals["xfailed"] == listed + 1, totals  # + the properties area
