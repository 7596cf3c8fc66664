"""The GitHub Action: its definition, the example workflows, and ci/gate.sh run for real.

The end-to-end runs of the whole action (a wheel built at this ref, installed in its own venv,
the gate, the artifact upload) are marked `installed`: ci/installed.sh runs them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from action_runner import PINNED, evaluate, run_action

ROOT = Path(__file__).resolve().parents[1]  # the checkout (tests run from it)
ACTION_DIR = ROOT / "ci"
ACTION = yaml.safe_load((ACTION_DIR / "action.yml").read_text())
GATE = ACTION_DIR / "gate.sh"
WORKFLOWS = ROOT / "ci" / "workflows"
TEXTBOOK = ROOT / "examples" / "textbook"
# The example workflows check the suite out at a pinned commit into this folder and use its
# ci/ directory as a local action (the suite has no published home to name).
SUITE_PATH = ".bullmq-conformance"
OUR_ACTION = f"./{SUITE_PATH}/ci"


def suite_bin() -> Path:
    """The console script under test: the wheel venv's in ci/installed.sh, else this one's."""
    python = Path(os.environ.get("BMQC_SUITE_PYTHON", sys.executable))
    return python.parent / "bullmq-conformance"


def gate(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    reports, summary = tmp_path / "reports", tmp_path / "step-summary.md"
    tmp_path.mkdir(parents=True, exist_ok=True)
    summary.write_text("earlier step\n")
    env = {**os.environ, "BMQC_REPORT_DIR": str(reports), "GITHUB_STEP_SUMMARY": str(summary),
           "BMQC_BIN": str(suite_bin()), "BMQC_PYTHON": sys.executable,
           **{f"BMQC_{k.upper()}": v for k, v in inputs.items()}}
    proc = subprocess.run(["bash", str(GATE)], capture_output=True, text=True, env=env,
                          timeout=300, check=False, cwd=tmp_path)
    return proc, reports, summary


def uses_of(document: Any) -> list[dict[str, Any]]:
    """Every step with `uses:` in an action or workflow document."""
    if "runs" in document:
        return [s for s in document["runs"]["steps"] if "uses" in s]
    return [s for job in document["jobs"].values() for s in job["steps"] if "uses" in s]


def test_action_inputs_outputs_and_steps() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) == {
        "candidate", "profile", "redis", "expectations", "extra-args", "adapter-timeout",
        "working-directory", "setup", "artifact-name", "python-version"}
    assert set(ACTION["outputs"]) == {"report-json", "junit-xml", "summary-md", "report-html"}
    steps = {s.get("id", s.get("name")): s for s in ACTION["runs"]["steps"]}
    # Installed from a wheel of the action's own ref, never editable, never into the job's env.
    install = steps["install"]
    assert 'bash "${{ github.action_path }}/install-wheel.sh"' in install["run"]
    assert install["env"]["BMQC_SOURCE"] == "${{ github.action_path }}/.."
    text = (ACTION_DIR / "action.yml").read_text() + (ACTION_DIR / "install-wheel.sh").read_text()
    assert not re.search(r"pip install (-e|--editable)", text)
    gate_step = steps["gate"]
    assert 'bash "${{ github.action_path }}/gate.sh"' in gate_step["run"]
    assert gate_step["working-directory"] == "${{ inputs.working-directory }}"
    for name, variable in (("candidate", "BMQC_CANDIDATE"), ("profile", "BMQC_PROFILE"),
                           ("redis", "BMQC_REDIS"), ("expectations", "BMQC_EXPECT"),
                           ("extra-args", "BMQC_EXTRA_ARGS"),
                           ("adapter-timeout", "BMQC_ADAPTER_TIMEOUT")):
        assert gate_step["env"][variable] == f"${{{{ inputs.{name} }}}}"
    for output in ACTION["outputs"].values():
        assert output["value"].startswith("${{ steps.gate.outputs.")
    upload = next(s for s in uses_of(ACTION) if "upload-artifact" in s["uses"])
    assert upload["if"] == "always()"  # the reports of a failed gate are the useful ones


def test_third_party_actions_are_pinned_by_commit_sha() -> None:
    documents = [ACTION, *(yaml.safe_load(p.read_text()) for p in WORKFLOWS.glob("*.yml"))]
    refs = [s["uses"] for d in documents for s in uses_of(d) if OUR_ACTION not in s["uses"]]
    assert len(refs) >= 8
    for ref in refs:
        assert PINNED.match(ref), f"{ref} is not pinned by a commit SHA"
    # Each pin carries the release it is, for the reader.
    for path in [ACTION_DIR / "action.yml", *WORKFLOWS.glob("*.yml")]:
        for line in path.read_text().splitlines():
            if re.search(r"uses: [\w-]+/[\w.-]+@[0-9a-f]{40}", line):
                assert re.search(r"# v\d+\.\d+\.\d+$", line), line


@pytest.mark.parametrize("port", ["python", "go", "elixir"])
def test_example_workflows_use_the_action_as_documented(port: str) -> None:
    workflow = yaml.safe_load((WORKFLOWS / f"{port}-port.yml").read_text())
    ours = [s for s in uses_of(workflow) if s["uses"] == OUR_ACTION]
    assert len(ours) == 1
    steps = uses_of(workflow)
    checkout = steps[steps.index(ours[0]) - 1]  # the suite, checked out just before its use
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["path"] == SUITE_PATH
    assert checkout["with"]["repository"] and checkout["with"]["ref"]
    assert "your-org" not in (WORKFLOWS / f"{port}-port.yml").read_text()
    with_ = ours[0]["with"]
    assert set(with_) <= set(ACTION["inputs"])
    candidate = with_["candidate"]
    assert candidate.startswith("command:")
    others = " ".join(s["uses"] for s in uses_of(workflow))
    if port == "go":
        assert "actions/setup-go@" in others
        assert with_["setup"].startswith("go build -o ")
        assert candidate == "command:./bin/bmq-adapter"
        assert "${{ matrix.profile }}" in with_["artifact-name"]  # unique names in a matrix
    if port == "elixir":
        assert "erlef/setup-beam@" in others
        assert "escript.build" in with_["setup"] and "mix run" not in candidate
        assert with_["profile"] == "echomq" and with_["working-directory"]


def test_the_runner_refuses_what_it_does_not_know() -> None:
    context = {"inputs": {"setup": "", "x": "a"}, "steps": {}}
    assert evaluate("inputs.setup != ''", context) is False
    assert evaluate("${{ inputs.x == 'a' && !failure() }}", context) is True
    assert evaluate("always()", context, failed=True) is True
    assert evaluate("success()", context, failed=True) is False
    for bad in ("inputs.nope", "hashFiles('x')", "inputs.x =="):
        with pytest.raises((ValueError, IndexError)):
            evaluate(bad, context)


@pytest.mark.slow
def test_gate_passes_the_reference_and_writes_every_report(tmp_path: Path,
                                                            redis_url: str) -> None:
    proc, reports, summary = gate(tmp_path, redis=redis_url)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    document = json.loads((reports / "report.json").read_text())
    assert document["totals"]["failed"] == document["totals"]["errored"] == 0
    cases = list(ET.parse(reports / "junit.xml").getroot().iter("testcase"))
    assert len(cases) == len(document["results"])
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not overwritten
    assert (reports / "summary.md").read_text() in text
    page = (reports / "report.html").read_text()
    assert "band-bump/4097-saturates" in page


@pytest.mark.slow
def test_gate_fails_a_failing_port_and_honours_expectations(tmp_path: Path,
                                                             redis_url: str) -> None:
    adapter = f"command:{sys.executable} {TEXTBOOK / 'adapter.py'}"
    # A few vectors: the textbook's full run, with its expectations file, is
    # tests/test_textbook.py's; here it is the gate's exit codes and reports.
    subset = "-k band-bump --examples 0"
    failing, reports, _ = gate(tmp_path / "plain", redis=redis_url, candidate=adapter,
                               extra_args=subset)
    assert failing.returncode == 1, failing.stdout[-2000:] + failing.stderr
    failed = {r["id"] for r in json.loads((reports / "report.json").read_text())["results"]
              if r["outcome"] == "failed"}
    assert failed and all(name.startswith("band-bump/") for name in failed), failed
    assert (reports / "report.html").is_file()  # written for a failing run too
    shutil.rmtree(reports)
    gated, reports, _ = gate(tmp_path / "expected", redis=redis_url, candidate=adapter,
                             expect=str(TEXTBOOK / "expectations.yaml"), extra_args=subset)
    assert gated.returncode == 0, gated.stdout[-2000:] + gated.stderr
    xfailed = {r["id"] for r in json.loads((reports / "report.json").read_text())["results"]
               if r["outcome"] == "xfailed"}
    assert xfailed == failed  # the same failures, each one expected


def test_gate_takes_extra_args_and_the_adapter_timeout(tmp_path: Path, redis_url: str) -> None:
    proc, reports, _ = gate(tmp_path, redis=redis_url, adapter_timeout="7.5",
                            extra_args="-k 'band-bump and 4097' --examples 0")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    ids = {r["id"] for r in json.loads((reports / "report.json").read_text())["results"]}
    assert ids and all(i.startswith("band-bump/4097") for i in ids), ids


def test_gate_passes_usage_errors_through(tmp_path: Path) -> None:
    proc, _, _ = gate(tmp_path, candidate="carrier-pigeon")
    assert proc.returncode == 2
    assert "carrier-pigeon" in proc.stderr and "Traceback" not in proc.stderr
    unbalanced, _, _ = gate(tmp_path / "quotes", extra_args="-k 'band-bump")
    assert unbalanced.returncode == 2
    assert unbalanced.stderr.strip() == \
        "bullmq-conformance gate: extra-args: No closing quotation"


def _workspace(tmp_path: Path) -> Path:
    """A port's checkout: the textbook adapter and its expectations in a subdirectory."""
    workspace = tmp_path / "workspace"
    shutil.copytree(TEXTBOOK, workspace / "port")
    return workspace


@pytest.mark.slow
@pytest.mark.installed
def test_action_installs_a_wheel_runs_the_gate_and_uploads_reports(tmp_path: Path,
                                                                   redis_url: str) -> None:
    workspace = _workspace(tmp_path)
    # One job per scenario, run one after another (each builds the wheel in this checkout).
    passing = run_action(ACTION_DIR, {"redis": redis_url, "artifact-name": "reference"},
                         workspace=workspace, runner_temp=tmp_path / "job1",
                         base_python=sys.executable)
    assert passing.ok, [(s.name, s.stderr[-1500:]) for s in passing.steps if not s.ok]
    install = next(s for s in passing.steps if s.name.startswith("Install bullmq"))
    venv_python = install.outputs["python"]
    where = subprocess.run([venv_python, "-c", "import conformance, importlib.metadata as m; "
                            "print(conformance.__path__[0]); "
                            "print(m.distribution('bullmq-conformance').read_text("
                            "'direct_url.json') or '')"],
                           capture_output=True, text=True, check=True, cwd=tmp_path)
    package_dir, direct_url = where.stdout.splitlines()[0], where.stdout.splitlines()[1:]
    assert "site-packages" in package_dir and not package_dir.startswith(str(ROOT))
    assert '"editable": true' not in "".join(direct_url)
    reports = passing.artifacts["reference"]
    assert sorted(p.name for p in reports.iterdir()) == [
        "junit.xml", "report.html", "report.json", "summary.md"]
    assert json.loads((reports / "report.json").read_text())["totals"]["failed"] == 0
    assert passing.outputs["report-json"].endswith("/reports/report.json")

    adapter = "command:python adapter.py"  # the job's Python, from the working directory
    # A few vectors are enough for a failing gate (the full textbook run is the gate tests').
    failing = run_action(ACTION_DIR, {"redis": redis_url, "candidate": adapter,
                                      "working-directory": "port", "artifact-name": "textbook",
                                      "extra-args": "-k band-bump --examples 0"},
                         workspace=workspace, runner_temp=tmp_path / "job2",
                         base_python=sys.executable)
    assert not failing.ok
    ran = {s.name: s for s in failing.steps}
    assert not ran["Run the conformance vectors"].ok and ran["Upload the reports"].ran
    report = json.loads((failing.artifacts["textbook"] / "report.json").read_text())
    failed = [r["id"] for r in report["results"] if r["outcome"] == "failed"]
    assert failed and all(name.startswith("band-bump/") for name in failed), failed
    # From the wheel, JUnit ids name the vector file as in the checkout, not a path into
    # site-packages.
    junit = (failing.artifacts["textbook"] / "junit.xml").read_text(encoding="utf-8")
    assert 'classname="vectors.band-bump.yaml" name="band-bump/2-same-ms"' in junit

    gated = run_action(ACTION_DIR, {"redis": redis_url, "candidate": "command:python bin/a.py",
                                    "working-directory": "port",
                                    "setup": "mkdir -p bin && cp adapter.py bin/a.py",
                                    "expectations": "expectations.yaml",
                                    "extra-args": "-k 'not properties' --examples 0",
                                    "adapter-timeout": "20", "artifact-name": "gated"},
                       workspace=workspace, runner_temp=tmp_path / "job3",
                       base_python=sys.executable)
    assert gated.ok, [(s.name, s.stderr[-1500:]) for s in gated.steps if not s.ok]
    assert (workspace / "port" / "bin" / "a.py").is_file()  # setup ran in working-directory
    totals = json.loads((gated.artifacts["gated"] / "report.json").read_text())["totals"]
    assert totals["xfailed"] > 100 and totals["failed"] == 0
